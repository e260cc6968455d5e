"""Hot GETs on real gateways: the fast path answers like the generic one, and steps aside."""

from __future__ import annotations

import http.client
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from std_msgs.msg import Float32

from gateway.demo.robot import Robot
from tests.conftest import GATEWAY_RERUN_SETTINGS, HOT_WIRE_SETTINGS, free_port
from tests.harness import Gateway, Response, enc
from tests.integration.test_faults_support import RosSide, wait_until
from tests.integration.test_security_helpers import (
    SECRET,
    SecureGateway,
    auth_settings,
    bearer,
    mint,
)

pytestmark = pytest.mark.integration

DATA = "/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature")
HOT_PATHS = (DATA, "/faults", "/apps", "/apps/temp_sensor", "/faults?status=all",
             "/apps/temp_sensor/data", "/apps/temp_sensor/operations", "/version-info")
# A header the generic path ignores on these routes but which keeps a request off the
# fast path: the same request, answered generically.
GENERIC = {"If-None-Match": '"no-such-tag"'}


@pytest.fixture(scope="module")
def gateways(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, Gateway]]:
    """One gateway per wire profile (the medkit one addresses any topic of the graph), and one
    with aggregation on and no peer (a robot that only announces itself: nothing to forward)."""
    d = tmp_path_factory.mktemp("hot")
    with Gateway(free_port(), domain, [f"state_dir={d}/spec", *GATEWAY_RERUN_SETTINGS],
                 d / "spec.log") as spec, \
            Gateway(free_port(), domain, [f"state_dir={d}/medkit", "api.profile=medkit",
                                          *GATEWAY_RERUN_SETTINGS], d / "medkit.log") as medkit, \
            Gateway(free_port(), domain, [f"state_dir={d}/agg", "aggregation.enabled=true",
                                          "aggregation.cache.enabled=true",
                                          *GATEWAY_RERUN_SETTINGS], d / "agg.log") as agg:
        for g, xv in ((spec, "x-vendor"), (medkit, "x-medkit"), (agg, "x-vendor")):
            g.wait_for(DATA, lambda b, xv=xv: b[xv]["status"] == "data", timeout=60)
        yield {"spec": spec, "medkit": medkit, "aggregating": agg}


@pytest.fixture(params=["spec", "medkit"])
def gw(gateways: dict[str, Gateway], request: pytest.FixtureRequest) -> Gateway:
    return gateways[request.param]


def hits(gw: Gateway, headers: dict[str, str] | None = None) -> int:
    """Answers served by the fast path so far; -1 when it is not installed."""
    body = gw.get("/health", headers=headers).json()
    block = next((v for k, v in body.items() if k.endswith("-hot-answers")), None)
    return -1 if block is None else int(block["hits"])


def same_answer(fast: Response, generic: Response) -> None:
    assert fast.status == generic.status == 200
    assert {k: v for k, v in fast.headers.items() if k != "date"} == \
        {k: v for k, v in generic.headers.items() if k != "date"}
    assert fast.body == generic.body


def fast_and_generic(gw: Gateway, path: str, headers: dict[str, str] | None = None
                     ) -> tuple[Response, Response]:
    """A fast answer and the generic answer just before it (retried past new samples)."""
    headers = headers or {}
    for _ in range(50):
        gw.get(path, headers=headers)  # offers the probe (or is already answered by it)
        before = hits(gw)
        generic = gw.get(path, headers={**headers, **GENERIC})
        middle = hits(gw)
        fast = gw.get(path, headers=headers)
        if middle == before and hits(gw) == middle + 1:
            return fast, generic
    raise AssertionError(f"{path}: no fast answer in 50 tries")


@pytest.mark.parametrize("path", HOT_PATHS)
def test_fast_answers_equal_generic_answers(gw: Gateway, path: str) -> None:
    fast, generic = fast_and_generic(gw, path)
    same_answer(fast, generic)
    assert fast.json()  # a real body, not an empty cache entry


@pytest.mark.parametrize("path", [p for p in HOT_PATHS if p != "/version-info"])
def test_a_gateway_with_aggregation_and_no_peer_answers_fast(
        gateways: dict[str, Gateway], path: str) -> None:
    """A robot runs aggregation to announce itself; with no entity from a peer nothing is
    forwarded, and its reads keep the fast path with the generic path's answers. With no
    peer its global fault list is its own answer, fast too."""
    fast, generic = fast_and_generic(gateways["aggregating"], path)
    same_answer(fast, generic)
    assert fast.json()


def test_a_gateways_own_version_info_is_fast_for_a_fan_out_read(
        gateways: dict[str, Gateway]) -> None:
    """With aggregation, a primary's fan-out read (X-Vendor-No-Fan-Out) of a robot's
    /version-info takes the fast path; a client's read of the same path is merged and never
    served this gateway's own answer."""
    agg = gateways["aggregating"]
    own = {"X-Vendor-No-Fan-Out": "1"}
    fast, generic = fast_and_generic(agg, "/version-info", own)
    same_answer(fast, generic)
    before = hits(agg)
    merged = agg.get("/version-info")
    assert merged.status == 200 and hits(agg) == before
    assert merged.body != fast.body and "x-vendor" in merged.json()


def wire_answers(gw: Gateway) -> int:
    body = gw.get("/health").json()
    return int(next(v for k, v in body.items() if k.endswith("-hot-answers"))["on_wire"])


def test_wire_answers_follow_setting_server_hot_wire(gw: Gateway) -> None:
    """On one keep-alive connection, as fleet reads come, hot reads are answered on the wire
    (never with DIAG_TEST_HOT_WIRE=off). A request that arrives before aiohttp's handler waits
    again for the next one (a new connection, or a busy machine delaying the handler's return
    to its wait) is left to aiohttp: the client pauses between requests, and the test reads
    until one was answered on the wire (or 40 reads were not, with the wire path off)."""
    fast_and_generic(gw, "/apps")
    before = wire_answers(gw)
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    deadline = time.monotonic() + 60
    try:
        for n in range(100000):
            conn.request("GET", "/api/v1/apps")
            resp = conn.getresponse()
            assert resp.status == 200 and resp.read()
            if n % 10 == 9 and (wire_answers(gw) > before or HOT_WIRE_SETTINGS and n >= 39
                                or time.monotonic() > deadline):
                break
            time.sleep(0.02)  # the server's handler waits again (not a bound on anything)
    finally:
        conn.close()
    assert (wire_answers(gw) > before) == (not HOT_WIRE_SETTINGS)


def test_unlisted_topic_reads_match(gateways: dict[str, Gateway]) -> None:
    medkit = gateways["medkit"]  # its reads address any topic of the graph
    # the fixture waited for temp_sensor only: rpm_sensor may be discovered a little later
    items = medkit.wait_for("/apps/rpm_sensor/data", lambda b: any(
        i["id"].endswith("rpm") for i in b["items"]), timeout=60)["items"]
    topic = next(i["id"] for i in items if i["id"].endswith("rpm"))
    path = "/apps/temp_sensor/data/" + enc(topic)
    medkit.wait_for(path, lambda b: b["x-medkit"].get("status") == "data", timeout=30)
    fast, generic = fast_and_generic(medkit, path)
    same_answer(fast, generic)
    assert fast.json()["id"] == topic


CALL = "/apps/lidar_sensor/operations/calibrate/executions"  # a Trigger service


def fast_and_generic_post(gw: Gateway, path: str, body: Any = None, raw: bytes | None = None
                          ) -> tuple[Response, Response]:
    """A fast-path answer to a POST and the generic answer to the same POST just before it."""
    for _ in range(50):
        gw.request("POST", path, {})  # offers the call (or is already answered by it)
        before = hits(gw)
        generic = gw.request("POST", path, body, headers=GENERIC, raw=raw)
        middle = hits(gw)
        fast = gw.request("POST", path, body, raw=raw)
        if middle == before and hits(gw) == middle + 1:
            return fast, generic
    raise AssertionError(f"POST {path}: no fast answer in 50 tries")


def test_service_calls_take_the_fast_path_with_equal_answers(gw: Gateway) -> None:
    gw.wait_for("/apps/lidar_sensor/operations", lambda b: any(
        i["id"] == "calibrate" for i in b["items"]), timeout=60)
    fast, generic = fast_and_generic_post(gw, CALL, {})
    same_answer(fast, generic)
    assert fast.json()["parameters"] == {"success": True, "message": "lidar calibrated"}


@pytest.mark.parametrize("body,raw,status", [
    ({"timeout": -1}, None, 400),               # a budget out of range
    ([1, 2], None, 400),                        # not an object
    (None, b"{not json", 400),                  # malformed
    ({"parameters": {"nope": 1}}, None, 400),   # a field Trigger.Request lacks
    (None, b'{"x": "' + b"a" * (1 << 20) + b'"}', 413),  # over server.max_json_body_bytes
])
def test_fast_path_errors_equal_generic_errors(gateways: dict[str, Gateway], body: Any,
                                               raw: bytes | None, status: int) -> None:
    gw = gateways["spec"]
    gw.wait_for("/apps/lidar_sensor/operations", lambda b: any(
        i["id"] == "calibrate" for i in b["items"]), timeout=60)
    fast, generic = fast_and_generic_post(gw, CALL, body, raw)
    assert fast.status == generic.status == status
    assert fast.body == generic.body and fast.json()["error_code"]
    assert {k: v for k, v in fast.headers.items() if k != "date"} == \
        {k: v for k, v in generic.headers.items() if k != "date"}


def test_a_held_lock_keeps_calls_on_the_guarded_path(gateways: dict[str, Gateway]) -> None:
    gw = gateways["spec"]
    fast_and_generic_post(gw, CALL, {})  # the path is hot
    owner, other = {"X-Client-Id": "hot-owner"}, {"X-Client-Id": "hot-other"}
    resp = gw.request("POST", "/apps/lidar_sensor/locks", {"lock_expiration": 60},
                      headers=owner)
    assert resp.status == 201, resp
    lock_id = resp.json()["id"]
    try:
        before = hits(gw)
        assert gw.request("POST", CALL, {}, headers=other).status == 409  # the guard ran
        assert gw.request("POST", CALL, {}, headers=owner).status == 200
        assert hits(gw) == before
    finally:
        assert gw.request("DELETE", f"/apps/lidar_sensor/locks/{lock_id}",
                          headers=owner).status == 204
    fast_and_generic_post(gw, CALL, {})  # fast again once no lock is held


def test_head_and_range_take_the_generic_path(gw: Gateway) -> None:
    fast, _ = fast_and_generic(gw, "/apps")
    before = hits(gw)
    head = gw.request("HEAD", "/apps")
    assert head.status == 200 and head.body == b""
    assert head.headers["content-length"] == fast.headers["content-length"]
    ranged = gw.get("/apps", headers={"Range": "bytes=0-9"})
    assert ranged.status == 200 and ranged.body == fast.body
    bad = gw.get("/apps", headers={"Range": "bytes=x"})
    assert bad.status == 416 and bad.json()["error_code"]
    assert hits(gw) == before


def test_new_samples_are_served(gateways: dict[str, Gateway]) -> None:
    gw = gateways["spec"]
    first = gw.get(DATA).json()["x-vendor"]["timestamp"]
    wait_until(lambda: gw.get(DATA).json()["x-vendor"]["timestamp"] != first, 30,
               "a newer sample on a hot data read")


def test_entity_and_fault_changes_are_served(gateways: dict[str, Gateway], ros: RosSide) -> None:
    gw = gateways["spec"]
    host = gw.get("/components").json()["items"][0]["id"]
    for path in ("/apps", "/faults", f"/components/{host}/data"):
        fast_and_generic(gw, path)  # every path hot
    ros.node("hot_probe_node", "/hot").create_publisher(Float32, "/hot/level", 10)
    gw.wait_for("/apps", lambda b: any(a["id"] == "hot_probe_node" for a in b["items"]),
                timeout=30)
    gw.wait_for(f"/components/{host}/data", lambda b: any(i["id"] == "/hot/level"
                                                           for i in b["items"]), timeout=30)
    reporter = ros.reporter(ros.node("hot_reporter", "/hot"))
    reporter.report("HOT_PATH_FAULT", 2, "reported while /faults is hot")
    gw.wait_for("/faults", lambda b: any(f["fault_code"] == "HOT_PATH_FAULT"
                                          for f in b["items"]), timeout=30)


@pytest.fixture(scope="module")
def guarded(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[SecureGateway]:
    d = tmp_path_factory.mktemp("guarded")
    settings = auth_settings(d, "all", "rate_limiting.enabled=true",
                             "rate_limiting.client_requests_per_minute=600",
                             "rate_limiting.global_requests_per_minute=6000",
                             "cors.allowed_origins=[http://dash.example]")
    with SecureGateway(free_port(), domain, settings, d / "gw.log") as g:
        yield g


READS = 40


def test_auth_rate_limits_and_cors_keep_every_check(guarded: SecureGateway) -> None:
    token = bearer(mint(SECRET, "viewer"))
    headers: dict[str, Any] = {**token, "Origin": "http://dash.example"}
    wait_until(lambda: guarded.get(DATA, headers=headers).json().get("x-vendor", {})
               .get("status") == "data", 60, "a data read with a token")
    remaining = []
    began = time.monotonic()
    for _ in range(READS):
        resp = guarded.get(DATA, headers=headers)
        assert resp.status == 200
        assert resp.headers["access-control-allow-origin"] == "http://dash.example"
        remaining.append(int(resp.headers["x-ratelimit-remaining"]))
    # Every read took a token: the bucket refills 10 a second meanwhile (600 a minute), so
    # the READS - 1 reads after the first leave at most that many back, plus one for rounding.
    refilled = math.ceil((time.monotonic() - began) * 10) + 1
    assert remaining[0] - remaining[-1] >= READS - 1 - refilled, (remaining, refilled)
    assert guarded.get(DATA).status == 401  # no token: refused after hot reads
    assert hits(guarded, token) == -1  # the fast path is not installed


def test_the_gateways_run_on_the_loop_asked_for(gateways: dict[str, Gateway]) -> None:
    # make test's second run puts them on asyncio's loop (DIAG_TEST_EVENT_LOOP), the first
    # on the default: uvloop
    expected = "asyncio" if "server.event_loop=asyncio" in GATEWAY_RERUN_SETTINGS else "uvloop"
    for name, gw in gateways.items():
        xv = "x-medkit" if name == "medkit" else "x-vendor"
        health = gw.wait_for("/health", lambda h, k=f"{xv}-event-loop": k in h, timeout=30)
        assert health[f"{xv}-event-loop"]["loop"] == expected, (name, health)
