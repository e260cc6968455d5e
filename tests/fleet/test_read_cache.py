"""Merged reads from cached peer answers (aggregation.cache.enabled): hits, freshness, events,
the hot-answer fast path, and authentication in front of it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from std_msgs.msg import Float32

from gateway.demo.robot import Robot
from tests.conftest import _domains, free_port
from tests.fleet.conftest import start_gateway, wait_until
from tests.harness import Gateway
from tests.integration.test_faults_support import RosSide
from tests.integration.test_security_helpers import SecureGateway, auth_settings, bearer

MAX_AGE_MS = 60000  # far longer than the test: only a change event can refresh an answer


@dataclass
class Fleet:
    """The primary with the read cache, its one peer, and the peer's ROS domain."""

    primary: Gateway
    peer: Gateway
    robot_domain: int
    logs: Path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    logs: Path = tmp_path_factory.mktemp("read-cache")
    primary_domain, robot_domain = next(_domains), next(_domains)
    robot = Robot.start(robot_domain, nodes=("temp_sensor",), log_dir=logs / "robot")
    gateways: list[Gateway] = []
    try:
        peer = start_gateway(robot_domain, logs, "peer", [])
        gateways.append(peer)
        primary = start_gateway(primary_domain, logs, "primary", [
            "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{peer.port}]",
            "aggregation.peer_names=[robot]", "aggregation.cache.enabled=true",
            f"aggregation.cache.max_age_ms={MAX_AGE_MS}"])
        gateways.append(primary)
        wait_until(lambda: "temp_sensor" in {a["id"] for a in primary.get("/apps").json()
                                             ["items"]}, 60, "the peer's app")
        yield Fleet(primary, peer, robot_domain, logs)
    finally:
        for gw in gateways:
            gw.stop()
        robot.stop()


@pytest.fixture(scope="module")
def cached(fleet: Fleet) -> tuple[Gateway, int]:
    return fleet.primary, fleet.robot_domain


def test_merged_reads_carry_the_freshness_bound_and_hit_the_cache(
        cached: tuple[Gateway, int]) -> None:
    primary, _ = cached
    host = primary.get("/components").json()["items"][0]["id"]
    first = primary.get(f"/components/{host}/data").json()
    assert first["x-vendor"]["cache"]["max_age_ms"] == MAX_AGE_MS
    before = primary.get("/health").json()["x-vendor-read-cache"]["hits"]
    again = primary.get(f"/components/{host}/data").json()
    assert again["items"] == first["items"]
    signals = primary.get("/health").json()["x-vendor-read-cache"]["invalidations"]
    third = primary.get(f"/components/{host}/data").json()  # the merge itself is reused
    assert third["items"] == first["items"] and "cache" in third["x-vendor"]
    assert 0 <= again["x-vendor"]["cache"]["age_ms"] <= MAX_AGE_MS
    stats = primary.get("/health").json()["x-vendor-read-cache"]
    assert stats["hits"] > before and stats["body_hits"] >= 1 and stats["bodies"] >= 1
    # the kept body says its own age: it grows from read to read while nothing changes
    time.sleep(0.05)  # the age must visibly grow (this is not a wait for a condition)
    later = primary.get(f"/components/{host}/data").json()
    if primary.get("/health").json()["x-vendor-read-cache"]["invalidations"] == signals:
        assert later["x-vendor"]["cache"]["age_ms"] > third["x-vendor"]["cache"]["age_ms"]
    logs = primary.get("/apps/temp_sensor/logs").json()  # logs are always read live
    assert "cache" not in logs["x-vendor"]


def test_a_peer_fault_event_refreshes_the_cached_fault_list(cached: tuple[Gateway, int]) -> None:
    primary, robot_domain = cached
    ros = RosSide(robot_domain)
    try:
        reporter = ros.reporter(ros.node("read_cache_probe", "/probe"))
        # the reporting node joins the peer's entities first (an entity change refreshes
        # every cached answer too): only the fault event can refresh the list below
        wait_until(lambda: "read_cache_probe" in {a["id"] for a in primary.get("/apps").json()
                                                  ["items"]}, 30, "the probe node")
        codes = {f["fault_code"] for f in primary.get("/faults").json()["items"]}
        assert "READ_CACHE_PROBE" not in codes  # the peer's answer is cached from here on
        invalidations = primary.get("/health").json()["x-vendor-read-cache"]["invalidations"]
        reporter.report("READ_CACHE_PROBE", 2, "raised after the list was cached")
        body = wait_until(lambda: (lambda b: b if "READ_CACHE_PROBE" in {
            f["fault_code"] for f in b["items"]} else None)(primary.get("/faults").json()),
            30, "the new fault in the merged list")
        assert body["x-vendor"]["cache"]["max_age_ms"] == MAX_AGE_MS
        assert primary.get("/health").json()["x-vendor-read-cache"]["invalidations"] \
            > invalidations
    finally:
        ros.executor.shutdown()
        ros.context.try_shutdown()


def hot_hits(gw: Gateway) -> int:
    """Answers the gateway's hot-answer fast path served so far."""
    return int(gw.get("/health").json()["x-vendor-hot-answers"]["hits"])


def test_the_fast_path_serves_cached_merged_reads_fresh_after_a_peer_change(
        fleet: Fleet) -> None:
    primary = fleet.primary
    host = primary.get("/components").json()["items"][0]["id"]
    path = f"/components/{host}/data"
    first = primary.get(path)
    before = hot_hits(primary)
    again = primary.get(path)
    assert hot_hits(primary) > before  # answered by the fast path
    assert again.status == 200 and again.headers["content-type"].startswith("application/json")
    body = again.json()
    assert body["items"] == first.json()["items"]
    assert body["x-vendor"]["cache"]["max_age_ms"] == MAX_AGE_MS
    assert 0 <= body["x-vendor"]["cache"]["age_ms"] <= MAX_AGE_MS
    # a caller asking for this gateway's part alone is not answered the merged body
    alone = primary.get(path, headers={"X-Vendor-No-Fan-Out": "1"}).json()
    assert "cache" not in alone["x-vendor"]
    ros = RosSide(fleet.robot_domain)
    try:  # a new node on the peer: its topic must show up long before the age bound
        ros.node("hot_probe", "/hot_probe").create_publisher(Float32, "/hot_probe/level", 10)
        fresh = wait_until(lambda: (lambda b: b if any(
            (i["x-vendor"].get("ros2") or {}).get("topic") == "/hot_probe/level"
            for i in b["items"]) else None)(primary.get(path).json()), 30,
            "the peer's new topic in the merged read")
        assert fresh["x-vendor"]["cache"]["max_age_ms"] == MAX_AGE_MS
        before = hot_hits(primary)
        assert primary.get(path).json()["items"] == fresh["items"]
        assert hot_hits(primary) > before  # the new body is served fast in its turn
    finally:
        ros.executor.shutdown()
        ros.context.try_shutdown()


def test_with_authentication_a_cached_merged_read_needs_a_token(fleet: Fleet) -> None:
    logs = fleet.logs / "secured"
    logs.mkdir()
    secured = SecureGateway(free_port(), next(_domains), auth_settings(logs, "all", *[
        "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{fleet.peer.port}]",
        "aggregation.peer_names=[robot]", "aggregation.cache.enabled=true",
        f"aggregation.cache.max_age_ms={MAX_AGE_MS}"]), logs / "secured.log")
    try:
        secured.start(timeout=60)
        token = bearer(secured.token("viewer-client", "viewer-secret")["access_token"])
        wait_until(lambda: "temp_sensor" in {a["id"] for a in secured.get(
            "/apps", headers=token).json().get("items", [])}, 60, "the peer's app")
        host = secured.get("/components", headers=token).json()["items"][0]["id"]
        path = f"/components/{host}/data"
        for _ in range(3):  # the merged body is kept from the first read on
            ok = secured.get(path, headers=token)
            assert ok.status == 200 and "cache" in ok.json()["x-vendor"]
        refused = secured.get(path)
        assert refused.status == 401
        assert "items" not in refused.json()
        assert secured.get(path, headers={"Authorization": "Bearer forged"}).status == 401
    finally:
        secured.stop()
