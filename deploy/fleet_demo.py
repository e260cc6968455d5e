"""Fleet demo: three demo robots, each with its own ROS domain and gateway announcing itself by
mDNS on loopback, and a primary gateway that discovers them and serves the fleet view.

    make fleet-demo                     # or: .venv/bin/python deploy/fleet_demo.py
    .venv/bin/python deploy/fleet_demo.py --port 8090 --domains 60,61,62,63

Every ROS process stays on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST) and mDNS is
bound to 127.0.0.1. Ctrl-C stops everything.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

from gateway.demo.robot import Robot, ros_env  # noqa: E402

# Each robot runs part of the demo vehicle; all three have a temp_sensor, so the primary
# shows colliding app ids as <robot>__temp_sensor.
ROBOTS = {
    "robot1": ("temp_sensor", "temp_monitor", "rpm_sensor", "calibration", "long_calibration"),
    "robot2": ("temp_sensor", "pressure_sensor", "actuator", "status_sensor", "controller"),
    "robot3": ("temp_sensor", "lidar_sensor", "managed_lifecycle"),
}
SERVICE = "_diag-gateway._tcp.local."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gateway(domain: int, port: int, settings: list[str], log: Path) -> subprocess.Popen[bytes]:
    """A `diag-gateway run` process on loopback."""
    cmd = [sys.executable, "-m", "gateway", "run", "--host", "127.0.0.1", "--port", str(port),
           "--domain", str(domain)]
    for s in settings:
        cmd += ["--set", s]
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=ros_env(domain), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_http(url: str, timeout: float, check: str = "") -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if check in resp.read().decode():
                    return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def main() -> int:
    ap = argparse.ArgumentParser(description="primary + three robots, joined by mDNS")
    ap.add_argument("--port", type=int, default=8080, help="the primary's port")
    ap.add_argument("--domains", default="70,71,72,73",
                    help="ROS domains of the primary and the three robots")
    ap.add_argument("--logs", default="/tmp/diag-fleet-demo", help="log directory")
    args = ap.parse_args()
    domains = [int(d) for d in args.domains.split(",")]
    if len(domains) != 4:
        ap.error("--domains needs four ids: primary, robot1, robot2, robot3")
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    robots: list[Robot] = []
    procs: list[subprocess.Popen[bytes]] = []
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    try:
        mdns = [f"aggregation.mdns_service={SERVICE}", "aggregation.mdns_interfaces=[127.0.0.1]"]
        for (name, nodes), domain in zip(ROBOTS.items(), domains[1:], strict=True):
            robots.append(Robot.start(domain, nodes=nodes, log_dir=logs / name))
            port = free_port()
            procs.append(gateway(domain, port, [*mdns, "aggregation.announce=true",
                                                f"aggregation.mdns_name={name}",
                                                f"state_dir={logs / name / 'state'}"],
                                 logs / f"{name}-gateway.log"))
            print(f"{name}: ROS domain {domain}, {len(nodes)} nodes, gateway "
                  f"http://127.0.0.1:{port}/api/v1", flush=True)
        base = f"http://127.0.0.1:{args.port}/api/v1"
        procs.append(gateway(domains[0], args.port, [
            *mdns, "aggregation.enabled=true", "aggregation.discover=true",
            "aggregation.mdns_name=primary", f"state_dir={logs / 'primary-state'}"],
            logs / "primary-gateway.log"))
        if not wait_http(base + "/health", 60):
            print(f"the primary did not start; see {logs}/primary-gateway.log", file=sys.stderr)
            return 1
        for name in ROBOTS:
            wait_http(base + "/health", 30, f'"name":"{name}"')
        print(f"\nFleet primary at {base}\n"
              f"  dashboard: {base.removesuffix('/api/v1')}/  (open in a browser)\n"
              f"  curl {base}/health          # peers robot1..3 and their status\n"
              f"  curl {base}/apps            # merged apps: robot2__temp_sensor, ...\n"
              f"  curl {base}/functions/powertrain/data\n"
              f"  curl {base}/version-info\n"
              f"Logs in {logs}. Ctrl-C stops the primary, the gateways and the robots.",
              flush=True)
        done.wait()
    finally:
        for proc in reversed(procs):
            stop(proc)
        for robot in robots:
            robot.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
