"""A fleet of real gateways: a primary with one local node and four peers.

robot1 (domain base+21): temp_sensor (its id collides with the primary's), calibration,
long_calibration. robot2 (+22): lidar_sensor (faults, a `calibrate` service), rosbag
recording on. robot3 (+23): rpm_sensor, unresponsive_param and a node serving two services
with one short name (item-id rule 3). junk (+24): a gateway without nodes behind a proxy that
can spoil its answers. Every ROS process stays on loopback (tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot, ros_env
from tests.conftest import free_port
from tests.domains import FLEET
from tests.fleet.junk import JunkProxy
from tests.harness import Gateway, Response

ROOT = Path(__file__).resolve().parents[2]
# Five domains of their own, 20-24 above DIAG_TEST_DOMAIN_BASE (the module counter skips them).
PRIMARY_DOMAIN, R1, R2, R3, JUNK = FLEET
FAN_OUT_MS = 2000
FORWARD_MS = 4000
MAX_PEER_BODY = 256 * 1024

# Two services with the short name `reset` on one node: item-id rule 3.
MULTI_NODE = """
import signal, threading, rclpy
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import Trigger
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
node = rclpy.create_node("multi", namespace="/fleet_test")
def ok(req, res):
    res.success, res.message = True, "reset"
    return res
node.create_service(Trigger, "/fleet_test/a/reset", ok)
node.create_service(Trigger, "/fleet_test/b/reset", ok)
ex = SingleThreadedExecutor(); ex.add_node(node)
threading.Thread(target=ex.spin, daemon=True).start()
signal.sigwait({signal.SIGINT, signal.SIGTERM})
ex.shutdown(timeout_sec=2); node.destroy_node(); rclpy.try_shutdown()
"""


def start_script(domain: int, code: str, log: Path) -> subprocess.Popen[bytes]:
    """A helper ROS node process on a domain (its own process group)."""
    env = ros_env(domain)
    env["PYTHONPATH"] = str(ROOT)
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT, then SIGKILL (by PID) when it lingers."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, 2)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, 9)
        proc.wait(5)


@dataclass
class Fleet:
    """The primary, its peers' gateways, the robots and the junk proxy."""

    primary: Gateway
    peers: dict[str, Gateway]
    junk: JunkProxy
    host: str = ""
    robots: list[Robot] = field(default_factory=list)
    helpers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def get(self, path: str, **kw: Any) -> Response:
        """GET on the primary."""
        return self.primary.get(path, **kw)


def wait_until(check: Any, timeout: float, what: str) -> Any:
    """Poll check() until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def start_gateway(domain: int, logs: Path, name: str, settings: list[str]) -> Gateway:
    """A gateway process on a free port."""
    state = [] if any(s.startswith("state_dir=") for s in settings) else [
        f"state_dir={logs / (name + '-state')}"]  # faults and uploads of this test run only
    return Gateway(free_port(), domain, ["discovery.refresh_debounce_ms=100", *state,
                                         *settings], logs / f"{name}.log").start()


@dataclass
class FleetPair:
    """A primary gateway and the robot gateway it aggregates."""

    primary: Gateway
    robot: Gateway


@contextmanager
def primary_with_robot(logs: Path, robot_nodes: tuple[str, ...], primary_nodes: tuple[str, ...],
                       robot_settings: list[str], primary_settings: list[str]
                       ) -> Iterator[FleetPair]:
    """A robot gateway and a primary aggregating it as `robot`, each with a demo robot."""
    from tests import conftest

    robot_domain, primary_domain = next(conftest._domains), next(conftest._domains)
    robots = [Robot.start(robot_domain, nodes=robot_nodes, log_dir=logs / "r1"),
              Robot.start(primary_domain, nodes=primary_nodes, log_dir=logs / "r0")]
    gateways: list[Gateway] = []
    try:
        robot = Gateway(free_port(), robot_domain, robot_settings, logs / "robot.log").start()
        gateways.append(robot)
        primary = Gateway(free_port(), primary_domain, [
            *primary_settings, "aggregation.enabled=true",
            f"aggregation.peer_urls=[http://127.0.0.1:{robot.port}]",
            "aggregation.peer_names=[robot]", "aggregation.timeout_ms=1000",
            "aggregation.forward_timeout_ms=4000"], logs / "primary.log").start()
        gateways.append(primary)
        yield FleetPair(primary, robot)
    finally:
        for g in gateways:
            g.stop()
        for r in robots:
            r.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    logs = tmp_path_factory.mktemp("fleet")
    robots: list[Robot] = []
    gateways: list[Gateway] = []
    helpers: list[subprocess.Popen[bytes]] = []
    junk: JunkProxy | None = None
    try:
        robots.append(Robot.start(PRIMARY_DOMAIN, nodes=("temp_sensor",), log_dir=logs / "r0"))
        robots.append(Robot.start(R1, nodes=("temp_sensor", "calibration", "long_calibration"),
                                  log_dir=logs / "r1"))
        robots.append(Robot.start(R2, nodes=("lidar_sensor",), log_dir=logs / "r2"))
        robots.append(Robot.start(R3, nodes=("rpm_sensor", "unresponsive_param"),
                                  log_dir=logs / "r3"))
        helpers.append(start_script(R3, MULTI_NODE, logs / "multi.log"))
        peers = {
            "robot1": start_gateway(R1, logs, "robot1", []),
            "robot2": start_gateway(R2, logs, "robot2", [
                "snapshots.rosbag.enabled=true", "snapshots.rosbag.duration_after_sec=0.5",
                f"state_dir={logs / 'robot2-state'}"]),
            "robot3": start_gateway(R3, logs, "robot3", [
                "parameter_service_timeout_sec=1.0", "parameter_negative_cache_sec=0"]),
            "junk-gw": start_gateway(JUNK, logs, "junk", []),
        }
        gateways.extend(peers.values())
        junk = JunkProxy(peers["junk-gw"].port).start()
        urls = [f"http://127.0.0.1:{peers[n].port}" for n in ("robot1", "robot2", "robot3")]
        urls.append(f"http://127.0.0.1:{junk.port}")
        primary = start_gateway(PRIMARY_DOMAIN, logs, "primary", [
            "aggregation.enabled=true",
            f"aggregation.peer_urls=[{','.join(urls)}]",
            "aggregation.peer_names=[robot1,robot2,robot3,junk]",
            f"aggregation.timeout_ms={FAN_OUT_MS}",
            f"aggregation.forward_timeout_ms={FORWARD_MS}",
            f"aggregation.max_response_bytes={MAX_PEER_BODY}",
            "aggregation.peer_auth_header=Bearer fleet-secret",
            "topic_sample_timeout_sec=3.0"])
        gateways.append(primary)
        fleet = Fleet(primary, peers, junk, robots=robots, helpers=helpers)

        def ready() -> bool:
            apps = {a["id"] for a in primary.get("/apps").json()["items"]}
            peers_up = all(p["status"] == "online" for p in primary.get("/health").json()["peers"])
            return peers_up and {"temp_sensor", "robot1__temp_sensor", "calibration",
                                 "long_calibration", "lidar_sensor", "rpm_sensor",
                                 "unresponsive_param", "multi"} <= apps
        wait_until(ready, 60, "the fleet view")
        fleet.host = primary.get("/components").json()["items"][0]["id"]
        yield fleet
    finally:
        if junk is not None:
            junk.stop()
        for gw in gateways:
            gw.stop()
        for proc in helpers:
            stop_process(proc)
        for robot in robots:
            robot.stop()
