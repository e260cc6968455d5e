"""Sites: a fleet primary over a site primary over two robots, in the lab (root only).

The site primary (aggregation.reexport) declares its robots' entities to the fleet primary
and answers its calls for the whole site, also those marked X-Vendor-No-Fan-Out: reads,
forwarding, the fault stream, triggers, locks and recordings pass through two levels, each
id is qualified once, and both levels serve merged reads from their read cache until a
robot's change signal reaches them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from tests.fleet.lab import (
    LAN_PORT,
    EventStream,
    Lab,
    LabRobot,
    gateway_argv,
    host_env,
    lab_unusable,
    on_host,
    python_argv,
    request,
    wait_until,
)

pytestmark = pytest.mark.integration

FAULT = "LIDAR_RANGE_INVALID"
RECORDER = ["snapshots.rosbag.enabled=true", "snapshots.rosbag.topic_selection=all",
            "snapshots.rosbag.duration_sec=3"]
CACHE = "aggregation.cache.enabled=true"  # both levels serve merged reads from cache
# a level's fault relay and each trigger copy's stream hold an SSE slot on the level below
SSE = "sse.max_clients=10"
NO_FAN_OUT = {"X-Vendor-No-Fan-Out": "1"}
TEMPERATURE = "/api/v1/functions/powertrain/data/powertrain/engine/temperature"


class Sites(NamedTuple):
    top: str  # the fleet primary (it runs a temp_sensor of its own: powertrain is mixed)
    site: str  # the site primary
    robots: dict[str, LabRobot]


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sites]:
    why = lab_unusable()
    if why:
        pytest.skip(why)
    logs = tmp_path_factory.mktemp("sites")
    with Lab(["fleet", "site", "r1", "r2"], tag=(os.getpid() + 2) % 100000) as lab:
        robots = {"r1": LabRobot(lab["r1"], logs).start([*RECORDER, SSE],
                                                        nodes=("temp_sensor", "lidar_sensor")),
                  "r2": LabRobot(lab["r2"], logs).start([SSE], nodes=("temp_sensor",))}
        site, fleet = lab["site"], lab["fleet"]
        site.run(gateway_argv("0.0.0.0", LAN_PORT, [
            "aggregation.enabled=true", "aggregation.reexport=true", CACHE, SSE,
            f"aggregation.peer_urls=[{robots['r1'].url},{robots['r2'].url}]",
            "aggregation.peer_names=[r1,r2]", f"state_dir={logs / 'site-state'}"]),
            logs / "site.log", host_env())
        fleet.run(python_argv("-m", "gateway.demo.nodes", "temp_sensor"),
                  logs / "fleet.temp_sensor.log", host_env())
        fleet.run(gateway_argv("0.0.0.0", LAN_PORT, [
            "aggregation.enabled=true", CACHE, SSE,
            f"aggregation.peer_urls=[http://{site.address}:8080]",
            "aggregation.peer_names=[site1]", f"state_dir={logs / 'fleet-state'}"]),
            logs / "fleet.log", host_env())
        top = f"http://{fleet.address}:{LAN_PORT}"
        wait_until(lambda: {a["id"] for a in _get(top, "/apps")["items"]}
                   >= {"temp_sensor", "r1__temp_sensor", "r2__temp_sensor", "lidar_sensor"},
                   180, "the fleet's own and the site's robots' apps on the fleet primary")
        yield Sites(top, f"http://{site.address}:{LAN_PORT}", robots)


def _get(base: str, path: str) -> Any:
    status, _, body = request("GET", f"{base}/api/v1{path}")
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def test_ids_qualified_once_and_reads_through_two_levels(sites: Sites) -> None:
    top = sites.top
    apps = {a["id"]: a for a in _get(top, "/apps")["items"]}
    # the site renamed its colliding apps; the fleet primary kept those ids as they are
    assert not [a for a in apps if a.startswith("site1__")]
    assert apps["r1__temp_sensor"]["x-vendor"]["contributors"] == ["site1"]
    # a read of a robot's app: fleet primary -> site primary -> robot
    data = _get(top, "/apps/r1__temp_sensor/data")
    assert data["items"], data
    # a merged server list: every gateway of the site answers, through the site
    wait_until(lambda: len(_get(top, "/version-info")["items"]) >= 4, 20,
               "version-info of fleet, site and both robots")
    versions = _get(top, "/version-info")["items"]
    paths = sorted(tuple(v.get("x-vendor", {}).get("peer_path", ())) for v in versions)
    assert paths == [(), (), ("site1", "r1"), ("site1", "r2")], versions


def test_fault_stream_and_forwarded_clear_through_two_levels(sites: Sites) -> None:
    top = sites.top
    wait_until(lambda: FAULT in {f["fault_code"] for f in _get(
        top, "/apps/lidar_sensor/faults")["items"]}, 30, "r1's fault read through the site")
    stream = EventStream(top)
    try:
        time.sleep(1.5)  # relays open: fleet -> site -> robot
        status, _, body = request("DELETE", f"{top}/api/v1/apps/lidar_sensor/faults/{FAULT}")
        assert status == 204, body
        events = wait_until(lambda: [e for e in stream.events
                                     if e.get("fault", {}).get("fault_code") == FAULT], 30,
                            "r1's fault event relayed by the site to the fleet primary")
        # the fleet primary's peer is the site; the path names the robot that raised it
        assert {(e["x-vendor"]["peer"], tuple(e["x-vendor"]["peer_path"])) for e in events} \
            == {("site1", ("site1", "r1"))}, events
    finally:
        stream.close()


def test_lock_taken_through_two_levels_lives_on_the_robot(sites: Sites) -> None:
    top, robots = sites.top, sites.robots
    status, _, body = request("POST", f"{top}/api/v1/apps/lidar_sensor/locks",
                              body={"lock_expiration": 60},
                              headers={"X-Client-Id": "fleet-operator"})
    assert status == 201, body
    status, locks = on_host(robots["r1"].host, "GET", 8081, "/apps/lidar_sensor/locks")
    assert status == 200 and locks["items"], locks
    # released through both levels (the robot's app is free for the next tests)
    lock_id = json.loads(body)["id"]
    status, _, body = request("DELETE", f"{top}/api/v1/apps/lidar_sensor/locks/{lock_id}",
                              headers={"X-Client-Id": "fleet-operator"})
    assert status == 204, body
    status, locks = on_host(robots["r1"].host, "GET", 8081, "/apps/lidar_sensor/locks")
    assert status == 200 and not locks["items"], locks


def test_recording_downloads_through_two_levels(sites: Sites) -> None:
    top = sites.top
    request("DELETE", f"{top}/api/v1/apps/lidar_sensor/faults/{FAULT}")  # raised again: recorded
    items = wait_until(lambda: _get(top, "/apps/lidar_sensor/bulk-data/rosbags")["items"], 60,
                       "r1's recording listed on the fleet primary")
    rec = items[0]
    status, headers, body = request(
        "GET", f"{top}/api/v1/apps/lidar_sensor/bulk-data/rosbags/{rec['id']}", timeout=60)
    assert status == 200 and len(body) == rec["size"] == int(headers["content-length"])
    assert body[:8] == b"\x89MCAP0\r\n"


def _create_trigger(base: str, entity: str, body: dict[str, Any]) -> dict[str, Any]:
    status, headers, raw = request("POST", f"{base}/api/v1{entity}/triggers", body=body)
    assert status == 201, raw[:300]
    created: dict[str, Any] = json.loads(raw)
    assert headers["location"] == f"/api/v1{entity}/triggers/{created['id']}"
    return created


def _trigger_ids(host: Any, path: str) -> list[str]:
    status, body = on_host(host, "GET", 8081, path)
    assert status == 200, body
    return [t["id"] for t in body["items"]]


def test_triggers_through_two_levels_fire_and_leave_nothing_behind(sites: Sites) -> None:
    top, r1, r2 = sites.top, sites.robots["r1"].host, sites.robots["r2"].host
    # a data trigger on a function the fleet primary and the site both contribute: its copy
    # on the site (created no-fan-out) has copies on both robots, whose firings come back up
    mixed = _create_trigger(top, "/functions/powertrain", {
        "resource": TEMPERATURE, "trigger_condition": {"condition_type": "OnChange"},
        "multishot": True, "path": "/temperature"})
    assert mixed["x-vendor"]["peers"]["site1"]["state"] == "linked", mixed
    # a fault trigger on a robot's app: created on the robot through both levels
    faults = _create_trigger(top, "/apps/lidar_sensor", {
        "resource": "/api/v1/apps/lidar_sensor/faults",
        "trigger_condition": {"condition_type": "OnChange"}, "multishot": True})
    site_copy = mixed["x-vendor"]["peers"]["site1"]["path"]
    copy = _get(sites.site, site_copy)
    assert {p["state"] for p in copy["x-vendor"]["peers"].values()} == {"linked"}, copy
    assert set(copy["x-vendor"]["peers"]) == {"r1", "r2"}, copy
    assert len(_trigger_ids(r1, "/functions/powertrain/triggers")) == 1
    assert len(_trigger_ids(r2, "/functions/powertrain/triggers")) == 1
    assert faults["id"] in _trigger_ids(r1, "/apps/lidar_sensor/triggers")

    mixed_events = EventStream(top, mixed["event_source"])
    fault_events = EventStream(top, faults["event_source"])
    try:
        # both robots' temperatures (relayed by the site) and the fleet's own reach the client
        wait_until(lambda: len(mixed_events.events) >= 6, 30, "temperature firings")
        wait_until(lambda: len(fault_events.events) >= 1, 10, "the fault trigger's stream")
        seen = len(fault_events.events)
        status, _ = on_host(r1, "DELETE", 8081, f"/apps/lidar_sensor/faults/{FAULT}")
        assert status == 204
        wait_until(lambda: [e for e in fault_events.events[seen:]
                            if e["payload"].get("fault_code") == FAULT], 20,
                   "r1's cleared fault firing the trigger on the fleet primary")
        assert {e["payload"]["temperature"] > -300 for e in mixed_events.events} == {True}
    finally:
        mixed_events.close()
        fault_events.close()

    for trigger in (mixed, faults):
        status, _, body = request("DELETE", f"{top}{trigger['event_source'][:-len('/events')]}")
        assert status == 204, body
    # nothing left behind on the site or the robots
    wait_until(lambda: not _get(sites.site, "/functions/powertrain/triggers")["items"]
               and not _trigger_ids(r1, "/functions/powertrain/triggers")
               and not _trigger_ids(r2, "/functions/powertrain/triggers")
               and faults["id"] not in _trigger_ids(r1, "/apps/lidar_sensor/triggers"), 15,
               "the trigger copies deleted on the site and both robots")
    status, _, _ = request("GET", f"{top}/api/v1/apps/lidar_sensor/triggers/{faults['id']}")
    assert status == 404


def _fault_items(base: str) -> tuple[list[tuple[str, float]], dict[str, Any]]:
    body = _get(base, "/faults")
    return ([(f["status"], f["first_occurred"]) for f in body["items"]
             if f["fault_code"] == FAULT], body["x-vendor"].get("cache") or {})


def _cache_age(base: str, path: str) -> int:
    age: int = _get(base, path)["x-vendor"]["cache"]["age_ms"]
    return age


def _cached_fault(base: str) -> tuple[list[tuple[str, float]], dict[str, Any]] | None:
    """The fault's items and cache block when answered from cache (age > 0), else None."""
    items, block = _fault_items(base)
    return (items, block) if items and block.get("age_ms", 0) > 0 else None


def test_cached_merged_reads_through_two_levels_fresh_after_a_robots_change(
        sites: Sites) -> None:
    top, site, r1 = sites.top, sites.site, sites.robots["r1"].host
    stream = EventStream(top)  # where a client sees the change signal
    try:
        wait_until(lambda: _fault_items(top)[0], 30, "r1's fault on the fleet primary")
        # a repeated read is answered from cache on both levels (a live answer has age 0)
        for base, path in ((top, "/faults"), (site, "/faults"),
                           (top, "/functions/powertrain/data"),
                           (site, "/functions/powertrain/data")):
            wait_until(lambda: _cache_age(base, path) > 0, 10,  # noqa: B023 (waited on here)
                       f"{path} served from the read cache of {base}", every=0.2)
        before, _ = wait_until(lambda: _cached_fault(top), 10,
                               "the fleet's cached /faults naming r1's fault")
        assert before[0][0] == "CONFIRMED", before
        status, _ = on_host(r1, "DELETE", 8081, f"/apps/lidar_sensor/faults/{FAULT}")
        assert status == 204  # the change made on the robot itself
        wait_until(lambda: [e for e in stream.events if e.get("event_type") == "fault_cleared"
                            and e["fault"]["fault_code"] == FAULT
                            and e["fault"]["first_occurred"] == before[0][1]], 20,
                   "r1's clear relayed by the site to the fleet primary")
        # the signal arrived: no read of either level may answer the fault as it was
        after, block = _fault_items(top)
        assert before[0] not in after, (before, after, block)
        assert before[0] not in _fault_items(site)[0]
    finally:
        stream.close()


def test_site_answers_for_its_whole_site_also_with_no_fan_out(sites: Sites) -> None:
    top, site = sites.top, sites.site
    # every call of the fleet primary to the site is marked no-fan-out (reads, relays, copies)
    # and counts on the site's answer covering what it declares: its robots too
    versions = _get_with(site, "/version-info", NO_FAN_OUT)["items"]
    assert sorted(v.get("x-vendor", {}).get("peer") or "" for v in versions) == ["", "r1", "r2"]
    data = _get_with(site, "/functions/powertrain/data", NO_FAN_OUT)["items"]
    assert {m for d in data for m in d["x-vendor"]["member_ids"]} \
        == {"r1__temp_sensor", "r2__temp_sensor"}, data
    declared = {a["id"] for a in _get(site, "/x-vendor-entities")["apps"]}
    assert {"r1__temp_sensor", "r2__temp_sensor", "lidar_sensor"} <= declared
    # a primary that is no site answers for itself alone
    assert len(_get_with(top, "/version-info", NO_FAN_OUT)["items"]) == 1


def _get_with(base: str, path: str, headers: dict[str, str]) -> Any:
    status, _, body = request("GET", f"{base}/api/v1{path}", headers=headers)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)
