"""Push delivery on the demo robot: cyclic subscriptions, triggers, fault triggers over SSE."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.integration.test_faults_support import RosSide, SseReader, wait_until
from tests.integration.test_push_support import Stream

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "lidar_sensor", "long_calibration")
TEMP = "/api/v1/apps/temp_sensor/data/powertrain/engine/temperature"
SCAN = "/api/v1/apps/lidar_sensor/data/perception/lidar/scan"
PROBE_NS = "/push_test"
LEVEL = f"/api/v1/apps/probe/data{PROBE_NS}/level"
MAX_SUBS = 4


@pytest.fixture(scope="module")
def gw(robot: Any, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("push")
    settings = [f"state_dir={tmp / 'state'}", "sse.max_clients=260",
                f"sse.max_subscriptions={MAX_SUBS}", "sse.client_queue_size=8",
                "discovery.refresh_debounce_ms=100", "snapshots.rosbag.enabled=true",
                "snapshots.rosbag.duration_sec=2", "snapshots.rosbag.duration_after_sec=0.5",
                "fault_triggers.poll_interval_ms=200"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: {"temp_sensor", "lidar_sensor"} <= {
            a["id"] for a in b["items"]}, timeout=30)
        # 10 Hz: the temperature walks 85..95..85 in 4 s
        resp = g.request("PUT", "/apps/temp_sensor/configurations/publish_rate", {"value": 10.0})
        assert resp.status == 200, resp
        yield g


class Probe:
    """A node in the test process publishing Float64 values on /push_test/level."""

    def __init__(self, ros: RosSide) -> None:
        from std_msgs.msg import Float64

        self.Float64 = Float64
        self.node = ros.node("probe", PROBE_NS)
        self.pub = self.node.create_publisher(Float64, f"{PROBE_NS}/level", 10)
        self.reporter = ros.reporter(self.node)

    def send(self, *values: float) -> None:
        for v in values:
            self.pub.publish(self.Float64(data=float(v)))
            time.sleep(0.05)


@pytest.fixture(scope="module")
def probe(gw: Gateway, ros: RosSide) -> Probe:
    p = Probe(ros)
    gw.wait_for("/apps/probe/data", lambda b: any(i["id"] == f"{PROBE_NS}/level"
                                                   for i in b["items"]), timeout=30)
    # A sentinel trigger keeps the topic sampled: later triggers on it see every sample.
    body = create_trigger(gw, "probe", LEVEL, {"condition_type": "OnChange"}, multishot=True)
    sentinel = Stream(gw.port, body["event_source"])
    wait_until(lambda: p.send(-1) or not sentinel.frames.empty(), 30, "the probe topic sampled")
    sentinel.close()
    return p


def create_trigger(gw: Gateway, app: str, resource: str, condition: dict[str, Any],
                   **extra: Any) -> dict[str, Any]:
    resp = gw.request("POST", f"/apps/{app}/triggers",
                      {"resource": resource, "trigger_condition": condition, **extra})
    assert resp.status == 201, resp
    body = resp.json()
    assert resp.headers["location"] == f"/api/v1/apps/{app}/triggers/{body['id']}"
    return body  # type: ignore[no-any-return]


def ready(gw: Gateway, trigger: dict[str, Any]) -> None:
    """Wait until the trigger's topic is resolved and sampled."""
    path = trigger["event_source"][len("/api/v1"):-len("/events")]
    gw.wait_for(path, lambda b: "topic" in b["x-vendor"], timeout=20)


def subscribe(gw: Gateway, resource: str, interval: str = "normal", duration: int = 30,
              entity: str = "/apps/temp_sensor") -> dict[str, Any]:
    resp = gw.request("POST", f"{entity}/cyclic-subscriptions",
                      {"resource": resource, "interval": interval, "duration": duration})
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


# cyclic subscriptions ---------------------------------------------------------------------

def test_subscription_delivers_at_interval_and_ends_at_expiry(gw: Gateway) -> None:
    sub = subscribe(gw, TEMP, "normal", duration=3)
    assert sub["observed_resource"] == TEMP and sub["protocol"] == "sse"
    assert sub["event_source"] == f"/api/v1/apps/temp_sensor/cyclic-subscriptions/{sub['id']}" \
                                  "/events"
    stream = Stream(gw.port, sub["event_source"])
    assert stream.status == 200 and stream.headers["content-type"] == "text/event-stream"
    assert stream.headers["cache-control"] == "no-cache"
    assert stream.ended.wait(30), "the stream closes at expiry"
    frames = stream.drain()
    # 200 ms for about 3 s: 15 ticks; a busy machine may skip some, never add any
    assert 5 <= len(frames) <= 17, len(frames)
    first = frames[0]["data"]
    assert set(first) == {"timestamp", "payload"} and first["timestamp"].endswith("Z")
    assert first["payload"]["id"] == "/powertrain/engine/temperature"
    assert 84.0 <= first["payload"]["data"]["temperature"] <= 96.0
    assert [f["id"] for f in frames] == list(range(1, len(frames) + 1))
    assert_error(gw.get(f"/apps/temp_sensor/cyclic-subscriptions/{sub['id']}"), 404)


def test_fast_interval_delivers_more_than_slow(gw: Gateway) -> None:
    counts = {}
    for interval in ("fast", "slow"):
        sub = subscribe(gw, TEMP, interval, duration=2)
        stream = Stream(gw.port, sub["event_source"])
        assert stream.ended.wait(30)
        counts[interval] = len(stream.drain())
    assert counts["slow"] <= 5 and counts["fast"] > counts["slow"], counts


def test_disconnect_ends_the_subscription_and_frees_the_slot(gw: Gateway) -> None:
    sub = subscribe(gw, TEMP, "fast", duration=60)
    path = f"/apps/temp_sensor/cyclic-subscriptions/{sub['id']}"
    before = gw.get("/health").json()["x-vendor-push"]["connected_clients"]
    stream = Stream(gw.port, sub["event_source"])
    stream.next()
    stream.close()
    wait_until(lambda: gw.get(path).status == 404, 10, "the subscription ends")
    wait_until(lambda: gw.get("/health").json()["x-vendor-push"]["connected_clients"]
               <= before, 10, "the slot is free")


def test_whole_collections_deliver_every_item(gw: Gateway) -> None:
    sub = subscribe(gw, "/api/v1/apps/lidar_sensor/faults", "slow", 30,
                    entity="/apps/lidar_sensor")
    stream = Stream(gw.port, sub["event_source"])
    try:
        frame = stream.next()
        payload = frame["data"]["payload"]
        assert payload["id"] == "faults" and isinstance(payload["data"], list)
        wait_until(lambda: any(i["fault_code"].startswith("LIDAR_")
                               for i in stream.next()["data"]["payload"]["data"]), 30,
                   "the lidar faults in the stream")
    finally:
        stream.close()
    for col in ("configurations", "logs"):
        sub = subscribe(gw, f"/api/v1/apps/lidar_sensor/{col}", "slow", 30,
                        entity="/apps/lidar_sensor")
        stream = Stream(gw.port, sub["event_source"])
        try:
            payload = stream.next(30)["data"]["payload"]
            assert payload["id"] == col and payload["data"], payload
            if col == "configurations":
                assert "max_range" in {i["name"] for i in payload["data"]}
        finally:
            stream.close()


# triggers -----------------------------------------------------------------------------------


def test_log_settings_inject_an_entry(gw: Gateway, probe: Probe) -> None:
    trig = create_trigger(gw, "probe", LEVEL, {"condition_type": "OnChangeTo",
                                               "target_value": 77}, path="/data",
                          log_settings={"severity": "warning", "marker": "Level reached"})
    ready(gw, trig)
    probe.send(1, 77)
    body = gw.wait_for("/apps/probe/logs", lambda b: any(
        e["message"].startswith("Level reached") for e in b["items"]), timeout=20)
    entry = next(e for e in body["items"] if e["message"].startswith("Level reached"))
    assert entry["severity"] == "warning" and trig["id"] in entry["message"]
    assert '"condition_type":"OnChangeTo"' in entry["message"]


def test_fault_operation_and_log_triggers(gw: Gateway, probe: Probe) -> None:
    faults = create_trigger(gw, "probe", "/api/v1/apps/probe/faults",
                            {"condition_type": "OnChange"}, path="/event_type",
                            multishot=True)
    logs = create_trigger(gw, "probe", "/api/v1/apps/probe/logs",
                          {"condition_type": "OnChangeTo", "target_value": "push probe says hi"},
                          path="/message")
    f_stream = Stream(gw.port, faults["event_source"])
    l_stream = Stream(gw.port, logs["event_source"])
    try:
        probe.reporter.report("PROBE_OVERHEAT", 2, "probe too hot")
        confirmed = f_stream.next()["data"]["payload"]
        assert confirmed["fault_code"] == "PROBE_OVERHEAT"
        assert confirmed["event_type"] == "fault_confirmed" and confirmed["severity"] == 2
        assert gw.request("DELETE", "/apps/probe/faults/PROBE_OVERHEAT").status == 204
        cleared = f_stream.next()["data"]["payload"]
        assert cleared["event_type"] == "fault_cleared"
        probe.node.get_logger().warning("push probe says hi")
        entry = l_stream.next()["data"]["payload"]
        assert entry["severity"] == "warning" and entry["id"].startswith("log_")
    finally:
        f_stream.close()
        l_stream.close()
    ops = create_trigger(gw, "long_calibration",
                         "/api/v1/apps/long_calibration/operations",
                         {"condition_type": "OnChangeTo", "target_value": "completed"},
                         path="/status")
    o_stream = Stream(gw.port, ops["event_source"])
    try:
        resp = gw.request("POST", "/apps/long_calibration/operations/long_calibration/"
                                  "executions", {"parameters": {"order": 2}})
        assert resp.status == 202, resp
        done = o_stream.next(30)["data"]["payload"]
        assert done["status"] == "completed" and done["goal_id"] == resp.json()["id"]
    finally:
        o_stream.close()


def test_component_and_function_triggers_see_member_changes(gw: Gateway, probe: Probe) -> None:
    fn = gw.get("/apps/probe").json()
    function = "push_test"
    assert fn["id"] == "probe"
    resp = gw.request("POST", f"/functions/{function}/triggers", {
        "resource": f"/api/v1/functions/{function}/faults",
        "trigger_condition": {"condition_type": "OnChange"}, "path": "/fault_code",
        "multishot": True})
    assert resp.status == 201, resp
    trig = resp.json()
    stream = Stream(gw.port, trig["event_source"])
    try:
        probe.reporter.report("PROBE_MEMBER", 2, "seen by the function")
        assert stream.next()["data"]["payload"]["fault_code"] == "PROBE_MEMBER"
    finally:
        stream.close()


# fault triggers ---------------------------------------------------------------------------

def test_fault_trigger_raises_and_heals_through_the_fault_manager(gw: Gateway) -> None:
    faults = SseReader(gw)
    try:
        resp = gw.request("POST", "/apps/temp_sensor/fault-triggers", {
            "data_name": "/powertrain/engine/temperature", "operator": ">", "threshold": 92,
            "fault_code": "ENGINE_HOT", "severity": "ERROR"})
        assert resp.status == 201, resp
        rule = resp.json()
        assert rule["id"].startswith("ftr_") and rule["active"] is True
        assert resp.headers["location"] == f"/api/v1/apps/temp_sensor/fault-triggers/{rule['id']}"
        assert_error(gw.request("POST", "/apps/temp_sensor/fault-triggers", {
            "data_name": "temperature", "operator": "<", "threshold": 1,
            "fault_code": "ENGINE_HOT"}), 409)
        raised = faults.next(lambda e: e["data"]["fault"]["fault_code"] == "ENGINE_HOT", 30)
        assert raised["event"] == "fault_confirmed"
        assert "> 92" in raised["data"]["fault"]["message"]
        listed = gw.get("/apps/temp_sensor/faults?status=all").json()["items"]
        assert "ENGINE_HOT" in [f["fault_code"] for f in listed]
        healed = faults.next(lambda e: e["data"]["fault"]["fault_code"] == "ENGINE_HOT"
                             and e["event"] == "fault_cleared", 30)
        assert healed["data"]["fault"]["x-vendor"]["status"] == "CLEARED"
        gw.wait_for("/apps/temp_sensor/bulk-data/rosbags", lambda b: any(
            "ENGINE_HOT" in d["x-vendor"]["fault_codes"] for d in b["items"]), timeout=40)
        raised = faults.next(lambda e: e["data"]["fault"]["fault_code"] == "ENGINE_HOT", 30)
        body = gw.wait_for("/faults", lambda b: "ENGINE_HOT" in [
            f["fault_code"] for f in b["items"]], timeout=10)
        assert body is not None
        assert rule["id"] in [r["id"] for r in
                              gw.get("/apps/temp_sensor/fault-triggers").json()["items"]]
        assert gw.request("DELETE", f"/apps/temp_sensor/fault-triggers/{rule['id']}").status \
            == 204
        assert_error(gw.get(f"/apps/temp_sensor/fault-triggers/{rule['id']}"), 404)
    finally:
        faults.close()


# many clients -------------------------------------------------------------------------------

def stall(port: int, path: str) -> socket.socket:
    """A client that asks for a stream and never reads it."""
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", port))
    stalled.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return stalled


async def _many(port: int, trigger_source: str, clients: int, seconds: float
                ) -> list[list[Any]]:
    import aiohttp
    import orjson

    results: list[list[Any]] = [[] for _ in range(clients)]
    connected = 0
    all_in = asyncio.Event()

    async def client(k: int, session: aiohttp.ClientSession) -> None:
        nonlocal connected
        async with session.get(f"http://127.0.0.1:{port}{trigger_source}") as resp:
            assert resp.status == 200
            connected += 1
            if connected == clients:
                all_in.set()
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                while b"\n\n" in buf:
                    frame, buf = buf.split(b"\n\n", 1)
                    for line in frame.split(b"\n"):
                        if line.startswith(b"data: "):
                            stamp = orjson.loads(line[6:])["payload"]["header"]["stamp"]
                            results[k].append((stamp["sec"], stamp["nanosec"]))

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks = [asyncio.ensure_future(client(k, session)) for k in range(clients)]
        await asyncio.wait_for(all_in.wait(), 60)
        started = [len(r) for r in results]
        await asyncio.sleep(seconds)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return [r[s:] for r, s in zip(results, started, strict=True)]


def test_200_clients_with_one_stalled_get_every_event(gw: Gateway) -> None:
    trig = create_trigger(gw, "temp_sensor", TEMP, {"condition_type": "OnChange"},
                          path="/header/stamp", multishot=True)
    heavy = subscribe(gw, SCAN, "fast", 120, entity="/apps/lidar_sensor")
    dropped_before = gw.get("/health").json()["x-vendor-push"]["dropped_clients"]
    stalled = stall(gw.port, heavy["event_source"])  # the 200th client, on a heavy stream
    try:
        results = asyncio.run(_many(gw.port, trig["event_source"], 199, 4.0))
        wait_until(lambda: gw.get("/health").json()["x-vendor-push"]["dropped_clients"]
                   > dropped_before, 60, "the stalled client dropped")
    finally:
        stalled.close()
    common = set.intersection(*(set(r) for r in results))
    union = set.union(*(set(r) for r in results))
    # Every client saw every event fired while all were attached (the first and last few
    # may straddle a client's connect or cancel).
    middle = sorted(union)[2:-2]
    assert len(middle) >= 5, len(union)
    assert set(middle) <= common
    for r in results:
        assert r == sorted(r), "in order"
    gw.request("DELETE", trig["event_source"][len("/api/v1"):-len("/events")])
    gw.request("DELETE", heavy["event_source"][len("/api/v1"):-len("/events")])


# persistence ------------------------------------------------------------------------------

def test_persistent_trigger_and_rules_survive_sigkill(robot: Any, domain: int,
                                                      tmp_path: Path) -> None:
    from tests.integration.test_faults_support import kill_gateway

    settings = [f"state_dir={tmp_path / 'state'}", "triggers.on_restart_behavior=restore",
                f"fault_triggers.storage.path={tmp_path / 'rules.json'}", "sse.max_clients=1",
                "discovery.refresh_debounce_ms=100"]
    port = free_port()
    gw = Gateway(port, domain, settings, tmp_path / "gw1.log").start()
    try:
        gw.wait_for("/apps", lambda b: "temp_sensor" in [a["id"] for a in b["items"]], 30)
        kept = create_trigger(gw, "temp_sensor", TEMP, {"condition_type": "OnChange"},
                              path="/header/stamp", multishot=True, persistent=True)
        gone = create_trigger(gw, "temp_sensor", TEMP, {"condition_type": "OnChange"})
        rule = gw.request("POST", "/apps/temp_sensor/fault-triggers", {
            "data_name": "temperature", "operator": ">", "threshold": 500,
            "fault_code": "NEVER_HOT"}).json()
        time.sleep(1.5)  # the previous value is stored once a second
    finally:
        kill_gateway(gw)
    gw = Gateway(port, domain, settings, tmp_path / "gw2.log").start()
    try:
        path = f"/apps/temp_sensor/triggers/{kept['id']}"
        gw.wait_for("/apps", lambda b: "temp_sensor" in [a["id"] for a in b["items"]], 30)
        assert gw.get(path).json()["persistent"] is True
        assert_error(gw.get(f"/apps/temp_sensor/triggers/{gone['id']}"), 404)
        assert [r["id"] for r in gw.get("/apps/temp_sensor/fault-triggers").json()["items"]] \
            == [rule["id"]]
        stream = Stream(gw.port, kept["event_source"])
        try:
            assert stream.next(30)["data"]["payload"]["temperature"] > 0
            # sse.max_clients=1: a second stream is refused
            assert_error(gw.get(kept["event_source"][len("/api/v1"):]), 503,
                         "service-unavailable")
        finally:
            stream.close()
        newer = create_trigger(gw, "temp_sensor", TEMP, {"condition_type": "OnChange"})
        assert newer["id"] not in (kept["id"], gone["id"])  # ids are never reused
    finally:
        gw.stop()
