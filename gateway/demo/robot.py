"""Start and stop the demo robot: one OS process per node, all on one ROS domain."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO

NODES: tuple[str, ...] = (
    "temp_sensor",
    "temp_monitor",
    "rpm_sensor",
    "pressure_sensor",
    "status_sensor",
    "lidar_sensor",
    "actuator",
    "controller",
    "calibration",
    "long_calibration",
    "managed_lifecycle",
    "unresponsive_param",
    "lifecycle_standby",
    "lifecycle_worker",
)

NAMESPACES: dict[str, str] = {
    "temp_sensor": "/powertrain/engine",
    "temp_monitor": "/powertrain/engine",
    "rpm_sensor": "/powertrain/engine",
    "pressure_sensor": "/chassis/brakes",
    "status_sensor": "/body/door/front_left",
    "lidar_sensor": "/perception/lidar",
    "actuator": "/chassis/brakes",
    "controller": "/body/lights",
    "calibration": "/powertrain/engine",
    "long_calibration": "/powertrain/engine",
    "managed_lifecycle": "/",
    "unresponsive_param": "/",
    "lifecycle_standby": "/",
    "lifecycle_worker": "/",
    "managed_lifecycle_active": "/",  # managed_lifecycle's medkit-profile name (RENAMES)
}

# The reference's integration tests (test_lifecycle) address its self-activating lifecycle
# demo node as `managed_lifecycle_active`; the spec profile keeps this project's name.
RENAMES: dict[str, dict[str, str]] = {
    "spec": {},
    "medkit": {"managed_lifecycle": "managed_lifecycle_active"},
}
PROFILES = tuple(RENAMES)

FASTDDS_PROFILE = Path(__file__).with_name("fastdds_profile.xml")
# A node stops (as on SIGTERM) when the process that started it is gone, however it left.
PARENT_ENV = "DIAG_DEMO_PARENT_PID"
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def full_name(node: str) -> str:
    """Return the fully qualified name of a demo node, e.g. /powertrain/engine/temp_sensor."""
    return f"{NAMESPACES[node].rstrip('/')}/{node}"


def ros_env(domain_id: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return an environment for ROS processes on domain_id, confined to localhost."""
    env = dict(os.environ if base is None else base)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
    env["FASTDDS_DEFAULT_PROFILES_FILE"] = str(FASTDDS_PROFILE)
    return env


def _node_env(domain_id: int) -> dict[str, str]:
    """Return ros_env plus a PYTHONPATH that makes the gateway package importable, and the
    PID the nodes stop with (PARENT_ENV: a robot does not outlive its starter)."""
    env = ros_env(domain_id)
    paths = [str(_PROJECT_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env[PARENT_ENV] = str(os.getpid())
    return env


_GRAPH_WAITER = """
import sys, time, rclpy
wanted = set(sys.argv[2:])
deadline = time.monotonic() + float(sys.argv[1])
rclpy.init()
node = rclpy.create_node("_demo_graph_waiter")
seen = set()
while True:
    names = node.get_node_names_and_namespaces()
    seen = {(ns.rstrip("/") + "/" + n) for n, ns in names}
    if wanted <= seen or time.monotonic() > deadline:
        break
    time.sleep(0.1)
node.destroy_node()
rclpy.try_shutdown()
sys.exit(0 if wanted <= seen else 1)
"""


def wait_for_graph(domain_id: int, names: Iterable[str] = NODES, timeout: float = 10.0) -> bool:
    """Wait (in a throwaway subprocess) until all nodes are visible; names may be qualified."""
    wanted = [n if n.startswith("/") else full_name(n) for n in names]
    cmd = [sys.executable, "-c", _GRAPH_WAITER, str(timeout), *wanted]
    try:
        done = subprocess.run(
            cmd,
            env=ros_env(domain_id),
            timeout=timeout + 10.0,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send sig to the process group led by proc, ignoring already-gone processes."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _spawn(cmd: list[str], env: dict[str, str], out: int | IO[bytes]) -> subprocess.Popen[bytes]:
    """Start cmd in its own session with SIGINT/SIGTERM blocked until the node takes them."""
    # The child inherits the blocked mask, so a stop request that arrives while it is still
    # importing rclpy stays pending and is taken by its sigwait instead of killing it.
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        return subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class Robot:
    """A running demo robot: one subprocess (and process group) per node."""

    def __init__(self, procs: dict[str, subprocess.Popen[bytes]], logs: list[IO[bytes]]) -> None:
        self.procs = procs
        self._logs = logs

    @classmethod
    def start(
        cls,
        domain_id: int,
        nodes: Iterable[str] = NODES,
        python: str = sys.executable,
        log_dir: str | os.PathLike[str] | None = None,
    ) -> Robot:
        """Spawn one process per node on domain_id; logs go to log_dir/<node>.log or nowhere."""
        env = _node_env(domain_id)
        procs: dict[str, subprocess.Popen[bytes]] = {}
        logs: list[IO[bytes]] = []
        if log_dir is not None:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
        robot = cls(procs, logs)
        try:
            for name in nodes:
                problem = unknown_nodes([name])
                if problem is not None:
                    raise ValueError(problem)
                out: int | IO[bytes] = subprocess.DEVNULL
                if log_dir is not None:
                    out = open(Path(log_dir) / f"{name}.log", "wb")  # noqa: SIM115 - stop() closes it
                    logs.append(out)
                procs[name] = _spawn([python, "-m", "gateway.demo.nodes", name], env, out)
        except BaseException:
            robot.stop()
            raise
        return robot

    @property
    def pids(self) -> dict[str, int]:
        """PIDs by node name."""
        return {name: proc.pid for name, proc in self.procs.items()}

    def alive(self) -> dict[str, bool]:
        """Whether each node process is still running."""
        return {name: proc.poll() is None for name, proc in self.procs.items()}

    def stop(self, timeout: float = 5.0) -> dict[str, int | None]:
        """SIGINT every node, wait up to timeout, SIGKILL stragglers; return exit codes."""
        for proc in self.procs.values():
            if proc.poll() is None:
                _signal_group(proc, signal.SIGINT)
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
        for log in self._logs:
            log.close()
        self._logs.clear()
        return {name: proc.returncode for name, proc in self.procs.items()}

    def __enter__(self) -> Robot:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def demo_nodes(profile: str, nodes: Iterable[str] = NODES) -> list[str]:
    """The demo robot's node names under the wire profile `profile`."""
    renames = RENAMES.get(profile, {})
    return [renames.get(name, name) for name in nodes]


def unknown_nodes(names: Iterable[str]) -> str | None:
    """None when every name is a demo node, else the refusal listing the valid names."""
    unknown = [n for n in names if n not in NAMESPACES]
    if not unknown:
        return None
    return (f"unknown demo node(s): {', '.join(unknown)}; valid names: {', '.join(NODES)}")


def main(argv: list[str] | None = None, prog: str = "python -m gateway.demo.robot") -> int:
    """CLI: ``python -m gateway.demo.robot --domain N [--only a,b] [--log-dir DIR]
    [--profile spec|medkit]``."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument(
        "--domain",
        type=int,
        default=int(os.environ.get("ROS_DOMAIN_ID", "0") or 0),
        help="ROS_DOMAIN_ID for every node (default: $ROS_DOMAIN_ID or 0)",
    )
    parser.add_argument(
        "--only", default="", help="comma-separated subset of nodes: " + ",".join(NODES)
    )
    parser.add_argument("--log-dir", default=None, help="write <node>.log files here")
    parser.add_argument(
        "--profile", default="spec", choices=PROFILES,
        help="the gateway's api.profile this robot is for: medkit runs managed_lifecycle as "
             "managed_lifecycle_active, the name the reference's clients use (default: spec)")
    args = parser.parse_args(argv)
    nodes = [n.strip() for n in args.only.split(",") if n.strip()] or list(NODES)
    problem = unknown_nodes(nodes)
    if problem is not None:
        print(f"{prog}: {problem}", file=sys.stderr)
        return 2
    nodes = demo_nodes(args.profile, nodes)

    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        with Robot.start(args.domain, nodes, log_dir=args.log_dir) as robot:
            for name, pid in robot.pids.items():
                print(f"{full_name(name)} pid={pid}", flush=True)
            print(f"demo robot running on ROS_DOMAIN_ID={args.domain}; Ctrl-C to stop", flush=True)
            stop.wait()
            codes = robot.stop()
        print("stopped: " + ", ".join(f"{n}={c}" for n, c in codes.items()), flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
