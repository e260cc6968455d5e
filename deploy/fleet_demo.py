"""Fleet demo: three demo robots, each with its own ROS domain and gateway announcing itself by
mDNS on loopback, and a primary gateway that discovers them and serves the fleet view.

    make fleet-demo                     # or: .venv/bin/python deploy/fleet_demo.py
    .venv/bin/python deploy/fleet_demo.py --port 8090 --domains 60,61,62,63
    make fleet-demo FLEET_WAIT=300 FLEET_JOIN_WAIT=120 FLEET_SERVICE=_myfleet._tcp.local.

Every ROS process stays on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST) and mDNS is
bound to 127.0.0.1. The gateways announce under an mDNS service type of this run only (unless
--service names one), so two fleet demos on one host stay apart. Ctrl-C stops everything.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

from gateway.demo.fleet_support import (  # noqa: E402
    DEFAULT_JOIN_WAIT_S,
    DEFAULT_WAIT_S,
    failure_report,
    log_tail,
    run_service,
    wait_http,
)
from gateway.demo.robot import Robot, ros_env  # noqa: E402
from gateway.process.portcheck import check_bindable  # noqa: E402

# Each robot runs part of the demo vehicle; all three have a temp_sensor, so the primary
# shows colliding app ids as <robot>__temp_sensor.
ROBOTS = {
    "robot1": ("temp_sensor", "temp_monitor", "rpm_sensor", "calibration", "long_calibration"),
    "robot2": ("temp_sensor", "pressure_sensor", "actuator", "status_sensor", "controller"),
    "robot3": ("temp_sensor", "lidar_sensor", "managed_lifecycle"),
}


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
    ap.add_argument("--wait", type=float, default=DEFAULT_WAIT_S, metavar="SEC",
                    help=f"how long the primary may take to answer (default {DEFAULT_WAIT_S:g})")
    ap.add_argument("--join-wait", type=float, default=DEFAULT_JOIN_WAIT_S, metavar="SEC",
                    help="how long each robot may take to join the primary "
                         f"(default {DEFAULT_JOIN_WAIT_S:g})")
    ap.add_argument("--service", default="", metavar="TYPE",
                    help="mDNS service type of the fleet (default: one of this run only, "
                         "_dg-<random>._tcp.local.)")
    args = ap.parse_args()
    service = args.service or run_service()
    domains = [int(d) for d in args.domains.split(",")]
    if len(domains) != 4:
        ap.error("--domains needs four ids: primary, robot1, robot2, robot3")
    problem = check_bindable("127.0.0.1", args.port)
    if problem is not None:  # before anything starts
        print(f"fleet demo: the primary cannot listen: {problem} "
              "(make fleet-demo ARGS=--port=N)", file=sys.stderr)
        return 2
    logs = Path(args.logs).resolve()
    logs.mkdir(parents=True, exist_ok=True)
    robots: list[Robot] = []
    procs: list[subprocess.Popen[bytes]] = []
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    try:
        mdns = [f"aggregation.mdns_service={service}", "aggregation.mdns_interfaces=[127.0.0.1]"]
        print(f"mDNS service type {service}; logs in {logs}", flush=True)
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
        primary_log = logs / "primary-gateway.log"
        primary = gateway(domains[0], args.port, [
            *mdns, "aggregation.enabled=true", "aggregation.discover=true",
            "aggregation.mdns_name=primary", f"state_dir={logs / 'primary-state'}"], primary_log)
        procs.append(primary)
        began = time.monotonic()
        if not wait_http(base + "/health", args.wait,
                         alive=lambda: primary.poll() is None and not done.is_set()):
            if done.is_set():  # Ctrl-C while starting
                return 130
            print("fleet demo: " + failure_report(
                "the primary gateway", primary_log, time.monotonic() - began, primary.poll(),
                "--wait SEC"), file=sys.stderr)
            return 1
        for (name, _), proc in zip(ROBOTS.items(), procs, strict=False):
            if not wait_http(base + "/health", args.join_wait, f'"name":"{name}"',
                             alive=lambda: not done.is_set()):
                if done.is_set():
                    return 130
                log = logs / f"{name}-gateway.log"
                state = "running" if proc.poll() is None else f"exited ({proc.returncode})"
                print(f"fleet demo: {name} did not join the primary within {args.join_wait:g} s "
                      f"(its gateway: {state}; more time: --join-wait SEC or "
                      f"FLEET_JOIN_WAIT=SEC); last lines of {log}:\n{log_tail(log)}",
                      file=sys.stderr, flush=True)
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
