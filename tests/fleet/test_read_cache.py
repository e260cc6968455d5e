"""Merged reads from cached peer answers (aggregation.cache.enabled): hits, freshness, events."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import Robot
from tests.conftest import _domains
from tests.fleet.conftest import start_gateway, wait_until
from tests.harness import Gateway
from tests.integration.test_faults_support import RosSide

MAX_AGE_MS = 60000  # far longer than the test: only a change event can refresh an answer


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, int]]:
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
        yield primary, robot_domain
    finally:
        for gw in gateways:
            gw.stop()
        robot.stop()


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
