"""The gateway's own ROS whatever the shell: a foreign ROS environment is set aside by one re-exec.

A shell with another ROS "sourced" (`/opt/ros/<distro>/setup.bash`) hands the gateway
`ROS_DISTRO`, `AMENT_PREFIX_PATH`, its `lib` directories on `LD_LIBRARY_PATH` and its
site-packages on `PYTHONPATH`; a parent that ran a ROS wheels' Python hands down the bootstrap
guard `_ROS_WHEELS_BOOTSTRAP_COMPLETE`. Any of them makes the gateway load the other ROS's
libraries (crash or silently run on the other distribution). The ROS wheels' `.pth` bootstrap
re-execs Python with `LD_LIBRARY_PATH` built from a set (a random order per process).

`isolate()` runs first in the command line, before anything imports rclpy: it computes the
gateway's environment (own library directories first, in a fixed order, then the user's
non-ROS entries; foreign ROS entries removed; the guard set) and re-execs once if it differs.
The user's values of the variables it changes travel across the re-exec in `USER_ENV_VAR`, so
`user_environment()` gives scripts and install hooks the environment the user had. Nothing
here imports rclpy.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .embedded import distro

log = logging.getLogger(__name__)

#: Set by the ROS wheels' `.pth` bootstrap once it has re-exec'd Python with its libraries.
GUARD = "_ROS_WHEELS_BOOTSTRAP_COMPLETE"
#: Carries the user's values of the variables the isolation changed (JSON) across the re-exec.
USER_ENV_VAR = "DIAG_GATEWAY_USER_ENV"
#: The variables the isolation may change; nothing else of the environment is touched.
ISOLATED_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "AMENT_PREFIX_PATH", "ROS_DISTRO", GUARD,
                 "RMW_IMPLEMENTATION")
#: The rmw the gateway's wheels carry: an RMW_IMPLEMENTATION naming another is set aside.
OWN_RMWS = ("rmw_fastrtps_cpp",)

# Shared libraries whose presence makes a directory a ROS library directory.
_ROS_LIB = re.compile(r"^lib(rcl|rcutils|rcpputils|rmw|rosidl_|fastcdr|fastrtps|fastdds)\w*\.so")
# Python packages whose presence makes a directory a ROS Python directory.
_ROS_PY = ("rclpy", "rpyutils", "rosidl_parser", "ros_wheels_bootstrapper", "ament_index_python")


@dataclass(frozen=True)
class OwnRos:
    """The ROS the gateway's interpreter carries (its prefix, library and Python directories)."""

    prefix: str
    lib_dirs: tuple[str, ...]  # the fixed order the gateway runs with
    python_dirs: tuple[str, ...] = ()
    distro: str | None = None


@dataclass(frozen=True)
class Plan:
    """The environment to run in and what was set aside to get it."""

    env: dict[str, str]
    user: dict[str, str | None]  # the user's values of ISOLATED_VARS (None: unset)
    set_aside: dict[str, list[str]] = field(default_factory=dict)
    reexec: bool = False
    changed: bool = False
    inplace: bool = False  # only the order of the gateway's own directories differs


def _split(value: str | None) -> list[str]:
    out: list[str] = []
    for part in (value or "").split(os.pathsep):
        if part and part not in out:
            out.append(part)
    return out


def _under(path: str, prefixes: list[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def user_values(environ: Mapping[str, str], own: OwnRos) -> dict[str, str | None]:
    """The user's values of ISOLATED_VARS: carried across a re-exec, else the bootstrap undone."""
    carried = environ.get(USER_ENV_VAR)
    if carried:
        try:
            values = json.loads(carried)["env"]
            return {k: (None if values.get(k) is None else str(values[k])) for k in ISOLATED_VARS}
        except (ValueError, KeyError, TypeError):
            pass  # a damaged carrier: read the environment as it is
    user: dict[str, str | None] = {k: environ.get(k) for k in ISOLATED_VARS}
    ld = _split(environ.get("LD_LIBRARY_PATH"))
    if environ.get(GUARD) and own.lib_dirs and set(own.lib_dirs) <= set(ld):
        # The gateway's bootstrap (this process's or an ancestor's in the same venv) ran: its
        # guard and directories are not the user's. Its set scrambled the user's entries:
        # those of one ROS prefix go back into the prefixes' order (an overlay before its
        # underlay), the rest keep the order found.
        user[GUARD] = None
        rest = [p for p in ld if p not in own.lib_dirs]
        prefixes = _split(environ.get("AMENT_PREFIX_PATH"))

        def rank(path: str) -> int:
            return next((i for i, p in enumerate(prefixes) if _under(path, [p])), len(prefixes))

        rest.sort(key=rank)
        user["LD_LIBRARY_PATH"] = os.pathsep.join(rest) or None
    return user


def plan(environ: Mapping[str, str], own: OwnRos, looks_like_ros: Callable[[str], bool],
         pid: int) -> Plan:
    """The gateway's environment for `environ`: re-exec when it differs (once per process)."""
    user = user_values(environ, own)
    env = {k: v for k, v in environ.items() if k not in ISOLATED_VARS}
    aside: dict[str, list[str]] = {}
    distro = environ.get("ROS_DISTRO")
    if distro and distro != own.distro:
        aside["ROS_DISTRO"] = [distro]
    elif distro:
        env["ROS_DISTRO"] = distro
    rmw = environ.get("RMW_IMPLEMENTATION")
    if rmw and rmw not in OWN_RMWS:  # e.g. rmw_cyclonedds_cpp from a Cyclone user's ~/.bashrc
        aside["RMW_IMPLEMENTATION"] = [rmw]
    elif rmw:
        env["RMW_IMPLEMENTATION"] = rmw
    ament = _split(environ.get("AMENT_PREFIX_PATH"))
    own_ament = [p for p in ament if p == own.prefix]
    foreign_prefixes = [p for p in ament if p != own.prefix]
    if foreign_prefixes:
        aside["AMENT_PREFIX_PATH"] = foreign_prefixes
    if own_ament:
        env["AMENT_PREFIX_PATH"] = own.prefix

    def foreign(path: str, own_dirs: tuple[str, ...]) -> bool:
        return path not in own_dirs and (_under(path, foreign_prefixes) or looks_like_ros(path))

    ld = _split(environ.get("LD_LIBRARY_PATH"))
    aside_ld = [p for p in ld if foreign(p, own.lib_dirs)]
    if aside_ld:
        aside["LD_LIBRARY_PATH"] = aside_ld
    kept_ld = [p for p in ld if p not in own.lib_dirs and p not in aside_ld]
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*own.lib_dirs, *kept_ld])
    py = _split(environ.get("PYTHONPATH"))
    aside_py = [p for p in py if foreign(p, own.python_dirs)]
    if aside_py:
        aside["PYTHONPATH"] = aside_py
    kept_py = [p for p in py if p not in aside_py]
    if kept_py:
        env["PYTHONPATH"] = os.pathsep.join(kept_py)
    guard = environ.get(GUARD)
    if guard and not set(own.lib_dirs) <= set(ld):
        aside[GUARD] = [f"{GUARD}={guard} (inherited from another ROS process)"]
    env[GUARD] = "1"
    changed = any(env.get(k) != environ.get(k) for k in ISOLATED_VARS)
    if not changed:
        return Plan(dict(environ), user, aside, reexec=False)
    if not aside and set(ld) == set(own.lib_dirs) and all(
            env.get(k) == environ.get(k) for k in ISOLATED_VARS if k != "LD_LIBRARY_PATH"):
        # Only the bootstrap's random order of the gateway's own directories: they share no
        # library name with different content, so the loader finds the same files in any
        # order. The variable is put in order in place (children inherit it); no re-exec.
        return Plan({**environ, "LD_LIBRARY_PATH": env["LD_LIBRARY_PATH"]}, user, aside,
                    changed=True, inplace=True)
    already = _carrier_pid(environ) == pid  # this process was re-exec'd already: never loop
    env[USER_ENV_VAR] = json.dumps({"pid": pid, "env": user, "set_aside": aside})
    return Plan(env, user, aside, reexec=not already, changed=True)


def _carrier_pid(environ: Mapping[str, str]) -> int | None:
    try:
        return int(json.loads(environ.get(USER_ENV_VAR, ""))["pid"])
    except (ValueError, KeyError, TypeError):
        return None


def set_aside_line(environ: Mapping[str, str]) -> str | None:
    """The log line naming what the re-exec of this process set aside (None: nothing)."""
    try:
        carried = json.loads(environ.get(USER_ENV_VAR, ""))
        aside = carried["set_aside"] if int(carried["pid"]) == os.getpid() else {}
    except (ValueError, KeyError, TypeError):
        return None
    if not aside:
        return None
    parts = [f"{k}: {', '.join(v)}" for k, v in sorted(aside.items())]
    return ("running on the gateway's own ROS; set aside from the shell's environment (scripts "
            "still get it): " + "; ".join(parts))


# --- the process's own ROS, the filesystem, and the re-exec --------------------------------


def own_ros(with_distro: bool = True) -> OwnRos:
    """The ROS of this interpreter, with the directories the wheels' bootstrap puts first."""
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    site = os.path.join(sys.prefix, "lib", f"python{ver}", "site-packages")
    libs = [os.path.join(sys.prefix, "lib")]
    try:
        names = sorted(os.listdir(site))
    except OSError:
        names = []
    libs += [str(os.path.realpath(os.path.join(site, n))) for n in names
             if n.startswith("ros_") and n.endswith(".libs") and os.path.isdir(os.path.join(site, n))]
    return OwnRos(prefix=sys.prefix, lib_dirs=tuple(libs), python_dirs=(site,),
                  distro=distro((site,)) if with_distro else None)


def looks_like_ros(path: str) -> bool:
    """Whether a directory holds ROS core libraries or ROS Python packages."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return any(_ROS_LIB.match(n) for n in names) or any(n in _ROS_PY for n in names)


_USER_ENV: dict[str, str] | None = None


def _user_env_of(environ: Mapping[str, str], own: OwnRos) -> dict[str, str]:
    env = {k: v for k, v in environ.items() if k != USER_ENV_VAR}
    for key, value in user_values(environ, own).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def user_environment() -> dict[str, str]:
    """The environment the user started the gateway with, before its own ROS loader environment.

    Scripts and install hooks run with it (after scrubbing secrets): a script that runs the
    robot's own ROS finds that ROS, not the gateway's libraries and bootstrap guard.
    """
    if _USER_ENV is not None:
        return dict(_USER_ENV)
    return _user_env_of(os.environ, own_ros(with_distro=False))


def isolate(argv: list[str] | None = None) -> None:
    """Re-exec this process with the gateway's own ROS environment if the shell's differs."""
    global _USER_ENV
    if _USER_ENV is not None:  # once per process (`python -m gateway` reaches main() too)
        return
    own = own_ros(with_distro="ROS_DISTRO" in os.environ)
    result = plan(os.environ, own, looks_like_ros, os.getpid())
    _USER_ENV = _user_env_of(os.environ, own)
    if result.reexec:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execve(sys.executable, argv or sys.orig_argv, result.env)
        except OSError as exc:  # no exec: run as started (the shell's ROS may then be loaded)
            print(f"diag-gateway: cannot re-exec on the gateway's own ROS ({exc}); set aside "
                  f"nothing of {sorted(result.set_aside)}", file=sys.stderr)
            return
    if result.inplace:
        os.environ["LD_LIBRARY_PATH"] = result.env["LD_LIBRARY_PATH"]
    elif result.changed:  # re-exec'd once already and still not clean: run, and say so
        print(f"diag-gateway: the ROS environment still differs after the re-exec: "
              f"{result.set_aside}", file=sys.stderr)


def rmw_line(environ: Mapping[str, str]) -> str | None:
    """What a shell's RMW_IMPLEMENTATION of another vendor means for the robot (None: none set
    aside)."""
    rmw = (user_values(environ, OwnRos("", ())).get("RMW_IMPLEMENTATION") or "").strip()
    if not rmw or rmw in OWN_RMWS:
        return None
    line = (f"RMW_IMPLEMENTATION={rmw} set aside: the gateway runs on its own "
            f"{OWN_RMWS[0]} (Fast DDS) and talks to the robot's nodes over the DDS wire")
    if "cyclone" in rmw:
        line += ("; a Cyclone DDS robot gets its nodes listed, topics read and written and its "
                 "services called (with rmw_cyclonedds's request header); its actions and "
                 "parameters are not verified (docs/ros.md, \"Other DDS vendors\")")
    return line


def announce() -> None:
    """Log the lines naming what was set aside (after logging is configured)."""
    for line in (set_aside_line(os.environ), rmw_line(os.environ)):
        if line:
            log.info("%s", line)
