"""Interface packages from other ROS install prefixes (setting `ros.interface_paths`).

A prefix is laid out like `/opt/ros/<distro>`, a merged colcon `install/` tree or an isolated
one (`install/<pkg>/...`): Python packages under `lib/python3.X/site-packages` (or
`dist-packages`), shared libraries under `lib/`. Only *interface packages* the gateway lacks are
taken from there: a directory with generated `msg/`, `srv/` or `action/` modules and its
`<pkg>_s__rosidl_typesupport_c` extension. Core libraries (rclpy, rcl, rmw, Fast DDS) and every
package the gateway has stay the gateway's own: the prefix's site-packages never goes on
`sys.path`; a meta path finder serves the chosen package names only.

Each package's `lib<pkg>__rosidl_*.so` libraries are loaded by absolute path before its module
is imported, so the extension's dependencies resolve to them by soname and the process's
library search path stays as it was (scripts and children are unaffected).
"""

from __future__ import annotations

import ctypes
import glob
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

SETTING = "ros.interface_paths"
_KINDS = ("msg", "srv", "action")
# Load order: each library needs the ones before it (generator_py needs the C typesupport).
_LIB_PARTS = ("rosidl_generator_c", "rosidl_typesupport_c", "rosidl_typesupport_fastrtps_c",
              "rosidl_typesupport_introspection_c", "rosidl_generator_py")


@dataclass
class InterfacePackage:
    """One interface package found in a prefix: its Python directory and library directory."""

    name: str
    site_dir: str
    lib_dir: str
    loaded: bool = False


@dataclass
class InterfacePaths:
    """What `ros.interface_paths` served: packages by name, prefixes and what was set aside."""

    prefixes: tuple[str, ...] = ()
    packages: dict[str, InterfacePackage] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """For /health and logs: prefixes, packages served, what was set aside and why."""
        return {"prefixes": list(self.prefixes), "packages": sorted(self.packages),
                "skipped": list(self.skipped)}


_active = InterfacePaths()


def active() -> InterfacePaths:
    """The interface paths installed in this process (empty when the setting is unset)."""
    return _active


def _python_dirs(root: str) -> list[str]:
    """site-packages / dist-packages directories of this interpreter's version under `root`."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    patterns = [os.path.join(root, sub, version, kind)
                for sub in ("lib", "local/lib", "lib64") for kind in ("site-packages",
                                                                      "dist-packages")]
    patterns.append(os.path.join(root, "lib", "python3", "dist-packages"))
    return [p for p in patterns if os.path.isdir(p)]


def _foreign_versions(root: str) -> list[str]:
    """Python versions a prefix was built for, when none is this interpreter's."""
    found = glob.glob(os.path.join(root, "lib", "python3.*", "*-packages"))
    return sorted({os.path.basename(os.path.dirname(p)) for p in found})


def _roots(prefix: str) -> list[str]:
    """The prefix itself and, for an isolated colcon tree, each `<prefix>/<pkg>/`."""
    roots = [prefix]
    for entry in sorted(os.listdir(prefix)):
        sub = os.path.join(prefix, entry)
        if os.path.isdir(os.path.join(sub, "lib")) and os.path.isdir(os.path.join(sub, "share")):
            roots.append(sub)
    return roots


def _is_interface_package(path: str, name: str) -> bool:
    has_kind = any(os.path.isfile(os.path.join(path, k, "__init__.py")) for k in _KINDS)
    has_ts = bool(glob.glob(os.path.join(path, f"{name}_s__rosidl_typesupport_c*.so")))
    return has_kind and has_ts


def scan(prefixes: Sequence[str], have: Any = None) -> InterfacePaths:
    """Find the interface packages of `prefixes` that `have(name)` says the gateway lacks.

    Raises ValueError naming the setting for a prefix that is not a directory.
    """
    have = have or _gateway_has
    found = InterfacePaths(tuple(prefixes))
    for prefix in prefixes:
        if not os.path.isdir(prefix):
            raise ValueError(f"setting '{SETTING}': {prefix!r} is not a directory")
        roots = _roots(os.path.abspath(prefix))
        dirs = [(root, d) for root in roots for d in _python_dirs(root)]
        if not dirs:
            versions = _foreign_versions(prefix)
            why = (f"built for {', '.join(versions)}, the gateway runs python"
                   f"{sys.version_info.major}.{sys.version_info.minor}" if versions
                   else "no site-packages or dist-packages found")
            found.skipped.append(f"{prefix}: {why}")
            continue
        for root, site in dirs:
            for name in sorted(os.listdir(site)):
                path = os.path.join(site, name)
                if name in found.packages or not name.isidentifier() \
                        or not _is_interface_package(path, name):
                    continue
                if have(name):
                    continue  # the gateway's own package wins, whatever the prefix holds
                lib_dir = _lib_dir(root, site, name)
                if lib_dir is None:
                    found.skipped.append(f"{name}: no lib{name}__rosidl_typesupport_c.so")
                    continue
                found.packages[name] = InterfacePackage(name, site, lib_dir)
    return found


def _lib_dir(root: str, site: str, name: str) -> str | None:
    """Where lib<name>__rosidl_typesupport_c.so is: <root>/lib, else anywhere below the site."""
    wanted = f"lib{name}__rosidl_typesupport_c.so"
    for d in (os.path.join(root, "lib"), os.path.join(root, "lib64")):
        if os.path.isfile(os.path.join(d, wanted)):
            return d
    hits = glob.glob(os.path.join(site, "**", wanted), recursive=True)
    return os.path.dirname(hits[0]) if hits else None


def _gateway_has(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _load_libraries(pkg: InterfacePackage, packages: dict[str, InterfacePackage]) -> None:
    """dlopen the package's libraries (and, first, those of served packages it needs)."""
    if pkg.loaded:
        return
    pkg.loaded = True
    for part in _LIB_PARTS:
        path = os.path.join(pkg.lib_dir, f"lib{pkg.name}__{part}.so")
        if not os.path.isfile(path):
            continue
        for _ in range(len(packages) + 1):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError as exc:
                # A dependency that is itself a served package: load it, then retry.
                dep = _missing_served(str(exc), packages)
                if dep is None or dep.loaded:
                    raise ImportError(f"{path}: {exc}") from None
                _load_libraries(dep, packages)


def _missing_served(error: str, packages: dict[str, InterfacePackage]) -> InterfacePackage | None:
    for name, pkg in packages.items():
        if f"lib{name}__rosidl_" in error:
            return pkg
    return None


class _Finder(importlib.abc.MetaPathFinder):
    """Serves the chosen interface packages (and their submodules) from their prefixes."""

    def __init__(self, found: InterfacePaths) -> None:
        self.found = found

    def find_spec(self, fullname: str, path: Iterable[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        """A spec for a served top-level package; submodules follow its __path__."""
        if "." in fullname:
            return None
        pkg = self.found.packages.get(fullname)
        if pkg is None:
            return None
        _load_libraries(pkg, self.found.packages)
        return importlib.machinery.PathFinder.find_spec(fullname, [pkg.site_dir])


def install(prefixes: Sequence[str]) -> InterfacePaths:
    """Serve the interface packages of `prefixes` the gateway lacks (once per process)."""
    global _active
    if not prefixes:
        return _active
    found = scan(prefixes)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder(found))  # last: the gateway's own packages come first
        _active = found
    log.info("%s: serving %d interface package(s) from %s: %s%s", SETTING,
             len(found.packages), ", ".join(prefixes), ", ".join(sorted(found.packages)) or "-",
             f"; set aside: {'; '.join(found.skipped)}" if found.skipped else "")
    return found


def serve(prefix: str) -> list[str]:
    """Add the interface packages of one more prefix (a run-time build) to those served;
    the names it serves (a package already served or the gateway's own is not replaced)."""
    global _active
    finder = next((f for f in sys.meta_path if isinstance(f, _Finder)), None)
    if finder is None:
        finder = _Finder(_active)
        sys.meta_path.append(finder)  # last: the gateway's own packages come first
    _active = served = finder.found
    found = scan([prefix], have=lambda name: _gateway_has(name) or name in served.packages)
    served.packages.update(found.packages)
    served.prefixes = (*served.prefixes, prefix)
    importlib.invalidate_caches()
    return sorted(found.packages)


SHELL_SETTING = "ros.interface_paths_from_shell"


def shell_prefixes(user_env: Mapping[str, str], own_prefix: str,
                   configured: Sequence[str] = ()) -> list[str]:
    """The prefixes of the user's AMENT_PREFIX_PATH (the shell's ROS, set aside by
    ros/dds/isolation.py) other than the gateway's own and those configured, in order."""
    def key(path: str) -> str:
        return os.path.realpath(path)

    skip = {key(own_prefix), *(key(p) for p in configured)}
    out: list[str] = []
    for part in user_env.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if part and os.path.isabs(part) and key(part) not in skip:
            skip.add(key(part))
            out.append(part)
    return out


def offer_shell_prefixes(prefixes: Sequence[str]) -> dict[str, list[str]]:
    """Serve the interface packages of `prefixes` (shell_prefixes()) like ros.interface_paths
    ones; a prefix that cannot serve this Python is logged, not fatal. Prefix -> packages."""
    served: dict[str, list[str]] = {}
    refused: list[str] = []
    for prefix in prefixes:
        if not os.path.isdir(prefix):
            refused.append(f"{prefix}: not a directory")
            continue
        roots = _roots(os.path.abspath(prefix))
        if not any(_python_dirs(root) for root in roots):
            versions = _foreign_versions(prefix)
            refused.append(f"{prefix}: " + (
                f"built for {', '.join(versions)}, the gateway runs python"
                f"{sys.version_info.major}.{sys.version_info.minor}" if versions
                else "no site-packages or dist-packages"))
            continue
        served[prefix] = serve(prefix)
    if prefixes:
        log.info("%s: the shell's AMENT_PREFIX_PATH (not the gateway's own ROS) "
                 "serves like %s: %s%s", SHELL_SETTING, SETTING,
                 "; ".join(f"{p} ({', '.join(n) or 'no package the gateway lacks'})"
                           for p, n in served.items()) or "-",
                 f"; not served: {'; '.join(refused)}" if refused else "")
    return served
