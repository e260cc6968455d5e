"""Peers found by mDNS: join, crash (health probes), rejoin, leave; on loopback and across
network namespaces joined by a bridge (root only; created and deleted here)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot, ros_env
from tests.conftest import free_port
from tests.domains import next_domain
from tests.fleet.conftest import ROOT, stop_process, wait_until
from tests.harness import Gateway

pytestmark = pytest.mark.integration

ROBOT_DOMAIN, PRIMARY_DOMAIN, NS_ROBOT_DOMAIN, NS_PRIMARY_DOMAIN = (next_domain() for _ in range(4))
# One service type per test run, so concurrent runs never see each other.
SERVICE = f"_dg{os.getpid() % 100000:05d}._tcp.local."
STATUS_TOPIC = "/body/door/front_left/state"


def mdns(name: str, *, announce: bool = False, discover: bool = False,
         interface: str = "127.0.0.1") -> list[str]:
    return [f"aggregation.mdns_service={SERVICE}", f"aggregation.mdns_name={name}",
            f"aggregation.mdns_interfaces=[{interface}]",
            f"aggregation.announce={str(announce).lower()}",
            f"aggregation.discover={str(discover).lower()}"]


def peers(gw: Any) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in gw.get("/health").json()["peers"]}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mdns")


def test_join_crash_rejoin_and_leave_on_loopback(logs: Path) -> None:
    with Robot.start(ROBOT_DOMAIN, nodes=("status_sensor",), log_dir=logs / "robot"), \
            Gateway(free_port(), PRIMARY_DOMAIN,
                    ["aggregation.enabled=true", "aggregation.peer_auth_header=Bearer own",
                     f"state_dir={logs / 'primary-state'}", *mdns("primary", discover=True)],
                    logs / "primary.log") as primary:
        robot_settings = ["discovery.refresh_debounce_ms=100", f"state_dir={logs / 'robot-a'}",
                          *mdns("robot-a", announce=True)]
        robot = Gateway(free_port(), ROBOT_DOMAIN, robot_settings, logs / "robot-a.log").start()
        try:
            t0 = time.monotonic()
            wait_until(lambda: peers(primary).get("robot-a", {}).get("status") == "online", 30,
                       "robot-a to join")
            print(f"\nmDNS join: online after {time.monotonic() - t0:.2f} s")
            assert peers(primary)["robot-a"]["url"] == f"http://127.0.0.1:{robot.port}"
            # bound to loopback only: both say so at start, naming the setting that fixes it
            for log_file in ("primary.log", "robot-a.log"):
                assert "aggregation.mdns_interfaces" in (logs / log_file).read_text()
            apps = wait_until(lambda: {a["id"]: a for a in primary.get("/apps").json()["items"]
                                       if a["id"] == "status_sensor"}, 20, "its apps")
            assert apps["status_sensor"]["x-vendor"]["contributors"] == ["robot-a"]
            read = primary.get("/apps/status_sensor/data/" + STATUS_TOPIC.replace("/", "%2F"))
            assert read.status == 200, read
            # crash: no mDNS goodbye; the primary's own probes mark it offline
            os.kill(robot.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
            robot.proc.wait(10)  # type: ignore[union-attr]
            t0 = time.monotonic()
            wait_until(lambda: peers(primary)["robot-a"]["status"] == "offline", 15,
                       "robot-a offline")
            print(f"mDNS crash: offline after {time.monotonic() - t0:.2f} s")
            app = next(a for a in primary.get("/apps").json()["items"]
                       if a["id"] == "status_sensor")
            assert app["x-vendor"]["available"] is False
            # it comes back on another port: the announcement re-points the peer
            robot = Gateway(free_port(), ROBOT_DOMAIN, robot_settings,
                            logs / "robot-a-2.log").start()
            t0 = time.monotonic()
            wait_until(lambda: peers(primary)["robot-a"]["url"].endswith(f":{robot.port}")
                       and peers(primary)["robot-a"]["status"] == "online", 30, "rejoin")
            print(f"mDNS rejoin: online after {time.monotonic() - t0:.2f} s")
            # a clean stop sends a goodbye: the peer and its entities leave the fleet
            robot.stop()
            wait_until(lambda: "robot-a" not in peers(primary), 20, "robot-a to leave")
            ids = {a["id"] for a in primary.get("/apps").json()["items"]}
            assert "status_sensor" not in ids
        finally:
            robot.stop()


# -- network namespaces ---------------------------------------------------------------------


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["ip", *args], capture_output=True, check=check, timeout=20)


class Netns:
    """Two network namespaces with a veth each, joined by a bridge that has a root address."""

    def __init__(self) -> None:
        tag = os.getpid() % 10000
        self.names = (f"dgfa{tag}", f"dgfb{tag}")
        self.bridge = f"dgbr{tag}"
        self.subnet = f"10.213.{tag % 200 + 20}"
        self.addresses = {self.names[0]: f"{self.subnet}.2", self.names[1]: f"{self.subnet}.3"}

    def __enter__(self) -> Netns:
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for k, ns in enumerate(self.names):
                host_end, ns_end = f"dgv{k}h{self.bridge[4:]}", f"dgv{k}n{self.bridge[4:]}"
                _ip("netns", "add", ns)
                _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
                _ip("link", "set", ns_end, "netns", ns)
                _ip("link", "set", host_end, "master", self.bridge)
                _ip("link", "set", host_end, "up")
                _ip("-n", ns, "addr", "add", f"{self.addresses[ns]}/24", "dev", ns_end)
                _ip("-n", ns, "link", "set", ns_end, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for ns in self.names:
            _ip("netns", "del", ns, check=False)
        _ip("link", "del", self.bridge, check=False)


def _netns_usable() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip tool is not installed"
    probe = f"dgprobe{os.getpid() % 10000}"
    if _ip("netns", "add", probe, check=False).returncode != 0:
        return "ip netns add is not permitted here"
    _ip("netns", "del", probe, check=False)
    return None


class NsProcess:
    """A process started in a network namespace (ip netns exec keeps the PID)."""

    def __init__(self, ns: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv], env=env, cwd=ROOT,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def stop(self) -> None:
        stop_process(self.proc)


class NsGateway(NsProcess):
    """A gateway in a namespace, reached through the bridge."""

    def __init__(self, ns: str, host: str, domain: int, settings: list[str], log: Path) -> None:
        self.host, self.port = host, free_port()
        argv = [sys.executable, "-m", "gateway", "run", "--host", host, "--port",
                str(self.port), "--domain", str(domain)]
        for s in settings:
            argv += ["--set", s]
        super().__init__(ns, argv, ros_env(domain), log)
        wait_until(self._up, 40, f"gateway in {ns}")

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"gateway exited with {self.proc.returncode}")
        try:
            return self.get("/health").status == 200
        except OSError:
            return False

    def get(self, path: str) -> Any:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request("GET", "/api/v1" + path)
            resp = conn.getresponse()

            class R:
                status = resp.status
                body = resp.read()

                def json(self) -> Any:
                    return json.loads(self.body)
            return R()
        finally:
            conn.close()


@pytest.fixture(scope="module")
def netns() -> Iterator[Netns]:
    why = _netns_usable()
    if why:
        pytest.skip(why)
    with Netns() as net:
        yield net


def test_join_and_leave_across_network_namespaces(netns: Netns, logs: Path) -> None:
    ns_robot, ns_primary = netns.names
    robot_ip, primary_ip = netns.addresses[ns_robot], netns.addresses[ns_primary]
    env = ros_env(NS_ROBOT_DOMAIN)
    env["PYTHONPATH"] = str(ROOT)
    node = NsProcess(ns_robot, [sys.executable, "-m", "gateway.demo.nodes", "status_sensor"],
                     env, logs / "ns-node.log")
    started: list[NsProcess] = [node]
    try:
        robot = NsGateway(ns_robot, robot_ip, NS_ROBOT_DOMAIN,
                          ["discovery.refresh_debounce_ms=100",
                           *mdns("robot-ns", announce=True, interface=robot_ip)],
                          logs / "ns-robot.log")
        started.append(robot)
        primary = NsGateway(ns_primary, primary_ip, NS_PRIMARY_DOMAIN,
                            ["aggregation.enabled=true",
                             *mdns("primary-ns", discover=True, interface=primary_ip)],
                            logs / "ns-primary.log")
        started.append(primary)
        wait_until(lambda: peers(primary).get("robot-ns", {}).get("status") == "online", 30,
                   "robot-ns to join across namespaces")
        assert peers(primary)["robot-ns"]["url"] == f"http://{robot_ip}:{robot.port}"
        wait_until(lambda: any(a["id"] == "status_sensor"
                               for a in primary.get("/apps").json()["items"]), 30,
                   "the namespaced robot's app")
        read = primary.get("/apps/status_sensor/data/" + STATUS_TOPIC.replace("/", "%2F"))
        assert read.status == 200
        robot.stop()  # clean stop: goodbye over the bridge
        wait_until(lambda: "robot-ns" not in peers(primary), 20, "robot-ns to leave")
    finally:
        for proc in reversed(started):
            proc.stop()
