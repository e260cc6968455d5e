"""The fleet simulator's pure parts (bench/fleet_sim.py, bench/_sim_robot.py): a simulated
robot's answers pass the primary's own checks, its fault stream resumes as a robot's does."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from multidict import CIMultiDict

from bench._sim_fleet import LossyLink
from bench._sim_robot import (
    APP,
    EventRing,
    SimRobot,
    Templates,
    answer,
    parse_head,
    parse_range,
    pct,
    robot_address,
)
from bench.fleet_sim import default_procs, gateway_settings, split
from gateway.federation.health import is_health_document
from gateway.federation.items import reserialize
from gateway.federation.relay import parse_events, position_of
from gateway.federation.wire import load

XV = "x-vendor"


class _Transport:
    """What a robot writes to one connection."""

    def __init__(self) -> None:
        self.out = bytearray()

    def write(self, data: bytes) -> None:
        self.out += data

    def is_closing(self) -> bool:
        return False


def _robot(name: str = "r7", index: int = 7, rec_bytes: int = 1000) -> SimRobot:
    return SimRobot(name, index, Templates(), rec_bytes, boot=0x1234)


def _split(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def _get(robot: SimRobot, path: str, headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, str], bytes]:
    raw, _ = robot.respond("GET", "/api/v1" + path, headers or {}, _Transport())  # type: ignore[arg-type]
    return _split(raw)


def _unchunk(raw: bytes) -> bytearray:
    out = bytearray()
    while raw:
        size, _, rest = raw.partition(b"\r\n")
        n = int(size, 16)
        out += rest[:n]
        raw = rest[n + 2:]
    return out


def test_addresses_are_distinct_loopback_addresses() -> None:
    seen = {robot_address(k) for k in range(1000)}
    assert len(seen) == 1000 and all(a.startswith("127.77.") for a in seen)
    assert robot_address(0) == "127.77.0.2" and robot_address(250) == "127.77.1.2"
    with pytest.raises(ValueError):
        robot_address(-1)


def test_pct() -> None:
    assert pct([3.0, 1.0, 2.0], 0.5) == 2.0
    assert pct([1.0, 2.0], 0.99) == 2.0
    assert pct([], 0.5) != pct([], 0.5)  # nan


def test_request_heads() -> None:
    raw = b"GET /api/v1/apps/a%20b/data?x=1 HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"e\"\r\n\r\nrest"
    method, path, query, headers, n = parse_head(raw)  # type: ignore[misc]
    assert (method, path, query) == ("GET", "/api/v1/apps/a b/data", "x=1")
    assert headers == {"host": "h", "if-none-match": '"e"'} and raw[n:] == b"rest"
    assert parse_head(b"GET / HTTP/1.1\r\nHost") is None
    with pytest.raises(ValueError):
        parse_head(b"nonsense\r\n\r\n")


@pytest.mark.parametrize(("value", "span"), [
    (None, None), ("bytes=0-9", (0, 9)), ("bytes=90-", (90, 99)), ("bytes=-10", (90, 99)),
    ("bytes=95-200", (95, 99))])
def test_ranges(value: str | None, span: tuple[int, int] | None) -> None:
    assert parse_range(value, 100) == span


@pytest.mark.parametrize("value", ["bytes=100-", "items=0-1", "bytes=0-1,3-4", "bytes=5-2"])
def test_unsatisfiable_ranges(value: str) -> None:
    with pytest.raises(ValueError):
        parse_range(value, 100)


def test_answers_carry_their_length() -> None:
    status, headers, body = _split(answer(200, b"{}"))
    assert status == 200 and headers["content-length"] == "2" and body == b"{}"
    assert b"Content-Length" not in answer(204, content_type=None)


def test_health_and_entities_pass_the_primarys_checks() -> None:
    robot = _robot()
    status, _, body = _get(robot, "/health")
    assert status == 200 and is_health_document(orjson.loads(body))
    status, headers, body = _get(robot, "/x-vendor-entities")
    entities, _ = load(orjson.loads(body))
    assert status == 200 and headers["etag"] == robot.etag
    assert set(entities.components) == {"r7"}  # the robot's own host
    assert set(entities.apps) == {APP} and entities.apps[APP].component == "r7"
    assert orjson.loads(body)["gateway"] == "r7"
    status, _, body = _get(robot, "/x-vendor-entities", {"if-none-match": robot.etag})
    assert status == 304 and body == b""


@pytest.mark.parametrize("path", [
    "/functions/perception/data", "/functions/perception/operations",
    "/functions/perception/configurations", "/functions/perception/faults",
    "/functions/perception/logs", "/components/r7/data", f"/apps/{APP}/data", "/faults",
    "/version-info"])
def test_list_reads_are_items_the_primary_keeps(path: str) -> None:
    status, _, body = _get(_robot(), path)
    items = orjson.loads(body)["items"]
    collection = "version-info" if path == "/version-info" else path.rsplit("/", 1)[1]
    kept, dropped = reserialize(collection, items, XV, "r7")
    assert status == 200 and items and len(kept) == len(items) and not dropped


def test_a_raised_fault_is_listed_and_streamed_then_cleared() -> None:
    robot = _robot()
    client = _Transport()
    head = robot.open_stream(client, None)  # type: ignore[arg-type]
    status, headers, _ = _split(head)
    assert status == 200 and position_of(CIMultiDict(headers), XV) == 0
    t = robot.raise_fault("SIM_1", now=lambda: 1000.5)
    assert t == 1000.5
    for path in ("/faults", f"/apps/{APP}/faults", "/components/r7/faults"):
        codes = [f["fault_code"] for f in orjson.loads(_get(robot, path)[2])["items"]]
        assert "SIM_1" in codes, path
    assert robot.respond("DELETE", f"/api/v1/apps/{APP}/faults/SIM_1", {},
                         client)[0].startswith(b"HTTP/1.1 204")  # type: ignore[arg-type]
    assert "SIM_1" not in json.dumps(orjson.loads(_get(robot, "/faults")[2]))
    events = list(parse_events(_unchunk(bytes(client.out))))
    assert [(i, e) for i, e, _ in events] == [(1, "fault_confirmed"), (2, "fault_cleared")]
    data: dict[str, Any] = orjson.loads(events[0][2])
    assert data["fault"]["fault_code"] == "SIM_1"
    assert data["timestamp"] == "1970-01-01T00:16:40.500Z"
    assert not robot.clear_fault("SIM_1")


def test_the_stream_resumes_from_last_event_id_or_says_refetch() -> None:
    ring = EventRing()
    for k in range(105):
        ring.publish("fault_confirmed", {"k": k})
    assert [orjson.loads(d)["k"] for _, _, d in parse_events(bytearray(
        b"".join(ring.replay(103))))] == [103, 104]
    assert ring.replay(None) == []
    gone = list(parse_events(bytearray(b"".join(ring.replay(2)))))
    assert gone[0][1] == "refetch" and orjson.loads(gone[0][2])["reason"] == "events_not_kept"
    assert len(gone) == 101
    ahead = list(parse_events(bytearray(b"".join(ring.replay(500)))))
    assert orjson.loads(ahead[0][2])["reason"] == "unknown_event_id"


def test_recordings_download_whole_or_by_range() -> None:
    robot = _robot(rec_bytes=1000)
    rid = orjson.loads(_get(robot, f"/apps/{APP}/bulk-data/rosbags")[2])["items"][0]["id"]
    status, headers, body = _get(robot, f"/apps/{APP}/bulk-data/rosbags/{rid}")
    assert status == 200 and len(body) == 1000 and headers["content-type"] == "application/x-mcap"
    status, headers, part = _get(robot, f"/apps/{APP}/bulk-data/rosbags/{rid}",
                                 {"range": "bytes=600-"})
    assert status == 206 and part == body[600:] and headers["content-range"] == "bytes 600-999/1000"
    assert _get(robot, f"/apps/{APP}/bulk-data/rosbags/{rid}", {"range": "bytes=5000-"})[0] == 416


def test_unknown_routes_answer_the_spec_error() -> None:
    status, _, body = _get(_robot(), "/apps/nope/data")
    assert status == 404 and orjson.loads(body)["error_code"] == "resource-not-found"


def test_a_lossy_link_delays_a_lost_chunk_by_a_retransmission_timeout() -> None:
    async def make() -> tuple[LossyLink, LossyLink]:
        return (LossyLink(0.08, 0, 1.0, ("127.0.0.1", 1)),
                LossyLink(0.08, 0, 0.0, ("127.0.0.1", 1)))
    lossy, clean = asyncio.run(make())
    assert clean.due("down", 100, now=10.0, last=0.0) == pytest.approx(10.04)
    assert lossy.due("down", 100, now=10.0, last=0.0) == pytest.approx(10.24)


def test_robots_split_over_processes() -> None:
    assert [len(r) for r in split(10, 3)] == [4, 3, 3]
    assert split(2, 5) == [range(0, 1), range(1, 2)]
    assert default_procs(100, 2) == 1 and default_procs(1000, 2) == 2
    assert default_procs(1000, 1) == 1


def test_primary_settings_per_join_mode(tmp_path: Any) -> None:
    robots = {"r0": robot_address(0), "r1": robot_address(1)}
    static = gateway_settings("primary", "static", robots, "_s._tcp.local.", "k" * 32, tmp_path)
    assert "aggregation.peer_urls=[http://127.77.0.2:8080,http://127.77.0.3:8080]" in static
    assert "aggregation.peer_names=[r0,r1]" in static
    many = {f"r{k}": robot_address(k) for k in range(300)}
    mdns = gateway_settings("primary", "mdns", many, "_s._tcp.local.", "k", tmp_path)
    assert "aggregation.max_discovered_peers=300" in mdns
    assert "aggregation.mdns_service=_s._tcp.local." in mdns
    connect = gateway_settings("primary", "connect", robots, "_s", "secret", tmp_path)
    assert "aggregation.connect_token=secret" in connect
    top = gateway_settings("primary", "mdns", {}, "_s", "k", tmp_path,
                           ["site0=http://127.0.0.1:1"])
    assert "aggregation.peer_names=[site0]" in top and "aggregation.discover=true" not in top


def test_a_link_hands_the_bytes_to_the_robot_in_process() -> None:
    """A connection through a robot's emulated link reaches its protocol without a socket: an
    answer comes after the link's round trips, the stream keeps the robot's transport, and a
    close on either side reaches the other."""
    from bench._sim_inproc import InProcClient
    from bench._sim_robot import RobotHttp

    rtt = 0.05

    async def run() -> None:
        loop = asyncio.get_running_loop()
        robot = _robot()
        protocols: list[RobotHttp] = []

        def protocol() -> RobotHttp:
            protocols.append(RobotHttp(robot))
            return protocols[-1]

        link = LossyLink(rtt, 0, 0.0, ("127.0.0.1", 1))
        server = await loop.create_server(lambda: InProcClient(link, "up", protocol),
                                          "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        started = loop.time()
        writer.write(b"GET /api/v1/health HTTP/1.1\r\nHost: r7\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert loop.time() - started >= 2 * rtt * 0.9  # the inner handshake, then a round trip
        length = int(_split(head + b"")[1]["content-length"])
        assert is_health_document(orjson.loads(await reader.readexactly(length)))
        # the robot closes (a request asking so): the peer reads the end of the stream
        writer.write(b"GET /api/v1/health HTTP/1.1\r\nHost: r7\r\nConnection: close\r\n\r\n")
        rest = await asyncio.wait_for(reader.read(), 10)
        assert rest.startswith(b"HTTP/1.1 200") and protocols[0].transport is not None
        assert protocols[0].transport.is_closing()
        writer.close()
        # the peer closes: the robot's protocol hears it
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/v1/health HTTP/1.1\r\nHost: r7\r\n\r\n")
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        lost = asyncio.Event()
        protocols[1].connection_lost = lambda _exc: lost.set()  # type: ignore[method-assign]
        writer.close()
        await asyncio.wait_for(lost.wait(), 10)
        server.close()

    asyncio.run(run())
