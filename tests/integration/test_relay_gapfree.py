"""No fault event silently missing from a primary's stream (issue 42), with real gateways and
real reporting nodes (an rclpy side in this process).

robot1 is a configured peer (aggregation.peer_urls) on a fixed port, so it can be killed and
started again at the same address; robot2 dials out to the primary (aggregation.connect_to)
through a user-space link (tests/fleet/linkemu.py) that this test partitions. Each robot has
its own ROS domain, the primary a third one (it hears no report itself). A client of the
primary's `/faults/stream` must get every fault code the robot confirmed, or a `refetch`
tagged with the robot (and then the merged `/faults` list holds the codes).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.federation.connect_auth import robot_token
from tests.conftest import free_port
from tests.fleet.linkemu import command, running
from tests.harness import Gateway
from tests.integration.test_faults_support import RosSide, SseReader, faults_by_code, wait_until

pytestmark = pytest.mark.integration

SECRET = "relay-gapfree-secret-" + str(os.getpid())
ROBOT_KEY = "relay-gapfree-robot-key-" + str(os.getpid())  # issues robots' own tokens
NS = "/gapfree"
XV = "x-vendor"


def next_domain(config: pytest.Config) -> int:
    """One more domain of this session's counter (the `domain` fixture's, tests/conftest.py)."""
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", "").endswith(f"tests{os.sep}conftest.py"):
            return next(plugin._domains)  # type: ignore[no-any-return]
    raise RuntimeError("tests/conftest.py is not loaded")


class Restartable:
    """A gateway on a fixed port, with its settings and state directory, started again."""

    def __init__(self, domain: int, settings: list[str], logs: Path, name: str,
                 port: int | None = None) -> None:
        self.port, self.domain, self.logs, self.name = port or free_port(), domain, logs, name
        self.settings = [f"state_dir={logs / (name + '-state')}",
                         "discovery.refresh_debounce_ms=100", *settings]
        self.starts = 0
        self.gw = self._new()

    def _new(self) -> Gateway:
        self.starts += 1
        return Gateway(self.port, self.domain, self.settings,
                       self.logs / f"{self.name}.{self.starts}.log")

    def start(self) -> Gateway:
        self.gw.start(timeout=60)
        return self.gw

    def kill(self) -> None:
        assert self.gw.proc is not None
        os.killpg(self.gw.proc.pid, signal.SIGKILL)
        self.gw.proc.wait(10)
        self.gw = self._new()


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gapfree")


@pytest.fixture(scope="module")
def link(logs: Path) -> Iterator[tuple[int, Path, list[int]]]:
    """The link robot2 dials the primary through: (listen port, control socket, [target])."""
    port = free_port()
    target = [free_port()]  # the primary's port, chosen here so the link can name it
    with running(logs, "link", port, target[0]) as control:
        yield port, control, target


@pytest.fixture(scope="module")
def robot1(domain: int, logs: Path) -> Iterator[Restartable]:
    r = Restartable(domain, [], logs, "robot1")
    r.start()
    yield r
    r.gw.stop()


@pytest.fixture(scope="module")
def primary(robot1: Restartable, link: tuple[int, Path, list[int]], logs: Path,
            request: pytest.FixtureRequest) -> Iterator[Restartable]:
    p = Restartable(next_domain(request.config), [
        "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{robot1.port}]",
        "aggregation.peer_names=[robot1]", f"aggregation.connect_token={SECRET}",
        f"aggregation.connect_robot_secret={ROBOT_KEY}",
        "sse.max_clients=4"], logs, "primary", port=link[2][0])
    p.start()
    yield p
    p.gw.stop()


@pytest.fixture(scope="module")
def ros2(request: pytest.FixtureRequest) -> Iterator[tuple[int, RosSide]]:
    domain = next_domain(request.config)
    side = RosSide(domain)
    yield domain, side
    side.close()


@pytest.fixture(scope="module")
def robot2(primary: Restartable, ros2: tuple[int, RosSide], link: tuple[int, Path, list[int]],
           logs: Path) -> Iterator[Gateway]:
    r = Restartable(ros2[0], [
        "aggregation.mdns_name=robot2", f"aggregation.connect_to=http://127.0.0.1:{link[0]}",
        f"aggregation.connect_robot_token={robot_token(ROBOT_KEY, 'robot2')}"], logs, "robot2")
    yield r.start()
    r.gw.stop()


def peer_status(primary: Gateway, name: str) -> str | None:
    try:
        body = primary.get("/health", timeout=5).json()
    except (OSError, ValueError):
        return None
    return next((p["status"] for p in body.get("peers", []) if p["name"] == name), None)


def tunnel_closed(primary: Gateway, name: str) -> bool:
    """The robot's tunnel is gone: removed from the peers, or held offline (`tunnel: closed`,
    its name kept for when it connects again)."""
    try:
        body = primary.get("/health", timeout=5).json()
    except (OSError, ValueError):
        return False
    entry = next((p for p in body.get("peers", []) if p["name"] == name), None)
    return entry is None or (entry.get(XV) or {}).get("tunnel") == "closed"


def relay_open(robot: Gateway) -> bool:
    """The primary's relay holds a stream slot on the robot."""
    try:
        return robot.get("/health", timeout=5).json()["x-vendor-sse"]["connected_clients"] >= 1
    except (OSError, ValueError, KeyError):
        return False


def attach(primary: Gateway, robot: Gateway, name: str,
           last_event_id: int | None = None) -> SseReader:
    """A client of the primary's stream, once the robot is online and relayed."""
    wait_until(lambda: peer_status(primary, name) == "online", 90, f"{name} online")
    client = SseReader(primary, last_event_id)
    assert client.status == 200, client.body
    wait_until(lambda: relay_open(robot), 60, f"the relay from {name} open")
    return client


class Seen:
    """What one client of the primary's stream got: fault codes and refetches, by peer."""

    def __init__(self, client: SseReader) -> None:
        self.client = client
        self.codes: set[str] = set()
        self.refetches: list[dict[str, Any]] = []
        self.last_id: int | None = None
        self.order: list[str] = []

    def pump(self) -> None:
        for frame in self.client.drain():
            self.last_id = frame["id"]
            data = frame["data"]
            if frame["event"] == "refetch":
                self.refetches.append(data)
                self.order.append("refetch")
            elif isinstance(data.get("fault"), dict):
                self.codes.add(data["fault"]["fault_code"])
                self.order.append(data["fault"]["fault_code"])

    def refetch_for(self, peer: str) -> list[dict[str, Any]]:
        return [r for r in self.refetches if (r.get(XV) or {}).get("peer") == peer]

    def has(self, codes: set[str]) -> bool:
        self.pump()
        return codes <= self.codes


def nothing_silently_missing(seen: Seen, primary: Gateway, peer: str, codes: set[str],
                             timeout: float = 120.0) -> str:
    """Every code reached the client, or it was told to refetch for the peer and the merged
    list holds the codes. Which of the two: 'stream' or 'refetch'."""
    deadline = time.monotonic() + timeout
    while True:
        seen.pump()
        if codes <= seen.codes:
            return "stream"
        if seen.refetch_for(peer) and codes <= set(faults_by_code(primary)):
            return "refetch"
        assert time.monotonic() < deadline, (
            f"missing from the stream with no refetch: {sorted(codes - seen.codes)}; "
            f"refetches {seen.refetches}")
        time.sleep(0.2)


def report(ros: RosSide, node_name: str, codes: list[str]) -> Any:
    rep = ros.reporter(ros.node(node_name, NS))
    for code in codes:
        rep.report(code, 2, f"{code} from {node_name}")
    return rep


def test_robot_killed_and_restarted_while_its_nodes_report(
        primary: Restartable, robot1: Restartable, ros: RosSide) -> None:
    seen = Seen(attach(primary.gw, robot1.gw, "robot1"))
    try:
        rep = report(ros, "before_kill", ["KILL_LIVE"])
        nothing_silently_missing(seen, primary.gw, "robot1", {"KILL_LIVE"})
        assert seen.refetch_for("robot1") == []  # relayed live: nothing to refetch
        robot1.kill()
        codes = [f"KILL_{i:02d}" for i in range(40)]
        rep2 = report(ros, "while_dead", codes)  # resent until the new process acks them
        robot1.start()
        nothing_silently_missing(seen, primary.gw, "robot1", set(codes))
        # the relay resumed from the id it had: the new process cannot replay from before
        # its start (refetch), and replays what it confirmed as it came back
        (refetch,) = seen.refetch_for("robot1")  # it came before the codes
        assert refetch["reason"] == "peer_events_not_kept", refetch
        assert refetch[XV]["peer_reason"] == "gateway_restarted", refetch
        wait_until(lambda: seen.has(set(codes)), 90, "every code replayed")
        assert seen.order.index("refetch") < min(seen.order.index(c) for c in codes)
        wait_until(lambda: rep.pending == 0 and rep2.pending == 0, 60, "every report acked")
    finally:
        seen.client.close()


def test_partition_past_offline_detection(
        primary: Restartable, robot1: Restartable, ros: RosSide) -> None:
    seen = Seen(attach(primary.gw, robot1.gw, "robot1"))
    try:
        assert robot1.gw.proc is not None
        os.kill(robot1.gw.proc.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: peer_status(primary.gw, "robot1") == "offline", 60,
                       "robot1 seen offline")
            codes = [f"STOP_{i:02d}" for i in range(20)]
            report(ros, "while_stopped", codes)
        finally:
            os.kill(robot1.gw.proc.pid, signal.SIGCONT)
        wait_until(lambda: peer_status(primary.gw, "robot1") == "online", 60, "robot1 back")
        nothing_silently_missing(seen, primary.gw, "robot1", set(codes))
    finally:
        seen.client.close()


def test_primary_restarted_clients_resume_with_replay_or_refetch(
        primary: Restartable, robot1: Restartable, ros: RosSide) -> None:
    seen = Seen(attach(primary.gw, robot1.gw, "robot1"))
    report(ros, "before_primary_kill", ["PRIM_LIVE"])
    nothing_silently_missing(seen, primary.gw, "robot1", {"PRIM_LIVE"})
    last = seen.last_id
    assert last is not None
    seen.client.close()
    primary.kill()
    codes = [f"PRIM_{i:02d}" for i in range(20)]
    report(ros, "while_primary_dead", codes)
    wait_until(lambda: set(codes) <= set(faults_by_code(robot1.gw)), 60, "codes on robot1")
    primary.start()
    again = Seen(SseReader(primary.gw, last_event_id=last))
    try:
        assert again.client.status == 200
        first = again.client.next_frame(30)  # the restarted primary kept nothing of before
        assert first["event"] == "refetch", first
        assert first["data"]["reason"] == "gateway_restarted", first
        assert first["data"]["last_event_id"] == last
        # the merged list then holds the robot's codes (once the robot is back online here)
        wait_until(lambda: set(codes) <= set(faults_by_code(primary.gw)), 90, "merged list")
        again.pump()
        assert again.last_id is None or again.last_id > last
    finally:
        again.client.close()


def test_dial_in_robot_link_dropped_past_its_tunnel_timeout(
        primary: Restartable, robot2: Gateway, ros2: tuple[int, RosSide],
        link: tuple[int, Path, list[int]]) -> None:
    _, ros = ros2
    control = link[1]
    seen = Seen(attach(primary.gw, robot2, "robot2"))
    try:
        rep = report(ros, "before_drop", ["DROP_LIVE"])
        nothing_silently_missing(seen, primary.gw, "robot2", {"DROP_LIVE"})
        command(control, "partition on")
        try:
            wait_until(lambda: tunnel_closed(primary.gw, "robot2"), 90,
                       "robot2's tunnel closed (the robot removed or held offline)")
            codes = [f"DROP_{i:02d}" for i in range(20)]
            rep2 = report(ros, "while_dropped", codes)
            wait_until(lambda: set(codes) <= set(faults_by_code(robot2)), 60,
                       "codes confirmed on robot2")
        finally:
            command(control, "partition off")
        wait_until(lambda: peer_status(primary.gw, "robot2") == "online", 90, "robot2 back")
        # resumed by name: the new Peer's relay asks robot2 for what it emitted meanwhile
        assert nothing_silently_missing(seen, primary.gw, "robot2", set(codes)) == "stream"
        assert seen.refetch_for("robot2") == []
        wait_until(lambda: rep.pending == 0 and rep2.pending == 0, 60, "every report acked")
    finally:
        seen.client.close()
