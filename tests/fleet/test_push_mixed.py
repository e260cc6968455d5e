"""Push delivery on entities merged across gateways: a primary and one robot gateway, both in
hybrid mode with the demo manifest, so areas, components and functions are contributed by both.

The primary runs temp_sensor; the robot runs rpm_sensor and lidar_sensor. A trigger or
subscription on a mixed entity covers the robot's members through a copy on the robot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.federation.push_links import COPY_LEASE_S
from tests.fleet.conftest import FleetPair, primary_with_robot
from tests.harness import Gateway
from tests.integration.test_faults_support import kill_gateway, wait_until
from tests.integration.test_push_support import Stream

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RPM = "data/powertrain/engine/rpm"
ROBOT_SSE = 6
TEMP = "data/powertrain/engine/temperature"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetPair]:
    logs = tmp_path_factory.mktemp("pushmixed")
    hybrid = ["discovery.mode=hybrid",
              f"discovery.manifest_path={ROOT / 'deploy' / 'demo_manifest.yaml'}",
              "discovery.refresh_debounce_ms=100", "sse.max_clients=20"]
    with primary_with_robot(
            logs, ("rpm_sensor", "lidar_sensor"), ("temp_sensor",),
            [*hybrid, f"state_dir={logs / 'rs'}", f"sse.max_clients={ROBOT_SSE}"],
            [*hybrid, f"state_dir={logs / 'ps'}", "triggers.on_restart_behavior=restore"]
    ) as pair:
        pair.robot.wait_for("/apps", lambda b: {"rpm_sensor", "lidar_sensor"} <= {
            a["id"] for a in b["items"] if a["x-vendor"]["is_online"]}, timeout=40)
        pair.primary.wait_for("/functions/engine-monitoring", lambda b: "robot" in
                              b["x-vendor"].get("contributors", ()), timeout=40)
        pair.primary.wait_for("/apps", lambda b: "temp_sensor" in {
            a["id"] for a in b["items"] if a["x-vendor"]["is_online"]}, timeout=40)
        yield pair


def create(gw: Gateway, kind: str, eid: str, word: str, body: dict[str, Any]
           ) -> dict[str, Any]:
    resp = gw.request("POST", f"/{kind}/{eid}/{word}", body)
    assert resp.status == 201, resp
    assert resp.headers["location"].startswith(f"/api/v1/{kind}/{eid}/{word}/")
    return resp.json()  # type: ignore[no-any-return]


def on_change(kind: str, eid: str, resource: str, **extra: Any) -> dict[str, Any]:
    return {"resource": f"/api/v1/{kind}/{eid}/{resource}",
            "trigger_condition": {"condition_type": "OnChange"}, **extra}


def test_mixed_function_trigger_fires_on_a_peer_member(mixed: FleetPair) -> None:
    p, r = mixed.primary, mixed.robot
    body = create(p, "functions", "engine-monitoring", "triggers",
                  on_change("functions", "engine-monitoring", RPM, path="/data",
                            multishot=True))
    assert body["event_source"] == \
        f"/api/v1/functions/engine-monitoring/triggers/{body['id']}/events"
    link = body["x-vendor"]["peers"]["robot"]
    assert link["state"] == "linked", link
    copy = r.get(link["path"]).json()  # the copy on the robot, never persistent there
    assert copy["observed_resource"] == f"/api/v1/functions/engine-monitoring/{RPM}"
    assert copy["persistent"] is False and copy["multishot"] is True
    assert copy["lifetime"] == COPY_LEASE_S  # renewed by the primary while it lives
    stream = Stream(p.port, body["event_source"])
    try:
        frames = stream.collect(2, 30)
        values = [f["data"]["payload"]["data"] for f in frames]
        assert all(isinstance(v, float) for v in values) and values[0] != values[1]
        assert all(f["data"]["x-vendor"] == {"peer": "robot"} for f in frames)
    finally:
        stream.close()
    # deleting it here deletes the robot's copy
    assert p.request("DELETE", f"/functions/engine-monitoring/triggers/{body['id']}"
                     ).status == 204
    wait_until(lambda: r.get(link["path"]).status == 404, 20, "the robot's copy deleted")


def test_no_fan_out_keeps_a_mixed_trigger_local(mixed: FleetPair) -> None:
    p, r = mixed.primary, mixed.robot
    resp = p.request("POST", "/functions/engine-monitoring/triggers",
                     on_change("functions", "engine-monitoring", RPM, multishot=True),
                     headers={"X-Vendor-No-Fan-Out": "1"})
    assert resp.status == 201, resp
    body = resp.json()
    assert "peers" not in body["x-vendor"]

    def sweeps() -> int:
        return int(p.get("/health").json()["x-vendor-push"]["peer_link_sweeps"])
    start = sweeps()
    wait_until(lambda: sweeps() >= start + 2, 20, "two link sweeps on the primary")
    assert "peers" not in p.get(f"/functions/engine-monitoring/triggers/{body['id']}"
                                ).json()["x-vendor"]
    assert r.get("/functions/engine-monitoring/triggers").json()["items"] == []
    assert p.request("DELETE", f"/functions/engine-monitoring/triggers/{body['id']}"
                     ).status == 204


def test_one_shot_mixed_trigger_ends_everywhere_after_the_first_event(mixed: FleetPair) -> None:
    p, r = mixed.primary, mixed.robot
    body = create(p, "areas", "engine", "triggers", on_change("areas", "engine", RPM,
                                                                path="/data"))
    link = body["x-vendor"]["peers"]["robot"]
    stream = Stream(p.port, body["event_source"])
    try:
        frame = stream.next(30)
        assert isinstance(frame["data"]["payload"]["data"], float)
        assert stream.ended.wait(10)
    finally:
        stream.close()
    assert p.get(f"/areas/engine/triggers/{body['id']}").status == 404
    wait_until(lambda: r.get(link["path"]).status == 404, 20, "the robot's copy ended")


def test_mixed_area_trigger_still_sees_local_members(mixed: FleetPair) -> None:
    p = mixed.primary
    body = create(p, "areas", "powertrain", "triggers",
                  on_change("areas", "powertrain", TEMP, path="/temperature", multishot=True))
    stream = Stream(p.port, body["event_source"])
    try:
        assert "temperature" in stream.next(30)["data"]["payload"]
    finally:
        stream.close()
    assert p.request("DELETE", f"/areas/powertrain/triggers/{body['id']}").status == 204


def test_mixed_component_subscription_merges_peer_items(mixed: FleetPair) -> None:
    p = mixed.primary
    # the lidar (on the robot) reports faults against the perception computer
    body = create(p, "components", "perception-computer", "cyclic-subscriptions", {
        "resource": "/api/v1/components/perception-computer/faults", "interval": "normal",
        "duration": 60})
    assert body["x-vendor"]["peers"]["robot"]["state"] == "linked"
    stream = Stream(p.port, body["event_source"])
    try:
        def lidar() -> bool:
            payload = stream.next(10)["data"]["payload"]
            assert payload["id"] == "faults"
            return any(i["fault_code"].startswith("LIDAR_") and i["x-vendor"]["peer"] == "robot"
                       for i in payload["data"])
        wait_until(lidar, 40, "the robot's lidar faults in the primary's frames")
    finally:
        stream.close()
    # the data topic only a peer member has comes from the robot's copy
    body = create(p, "functions", "engine-monitoring", "cyclic-subscriptions", {
        "resource": f"/api/v1/functions/engine-monitoring/{RPM}", "interval": "fast",
        "duration": 60})
    stream = Stream(p.port, body["event_source"])
    try:
        frames = stream.collect(3, 30)
        assert {f["data"]["payload"]["id"] for f in frames} == {"/powertrain/engine/rpm"}
    finally:
        stream.close()


def test_a_restored_persistent_trigger_on_a_mixed_entity_links_again(mixed: FleetPair) -> None:
    p = mixed.primary
    body = create(p, "functions", "engine-monitoring", "triggers",
                  on_change("functions", "engine-monitoring", RPM, path="/data",
                            multishot=True, persistent=True))
    old_copy = body["x-vendor"]["peers"]["robot"]["path"]
    path = f"/functions/engine-monitoring/triggers/{body['id']}"
    kill_gateway(p)
    p.start()
    restored = p.wait_for(path, lambda b: b.get("x-vendor", {}).get("peers", {}).get(
        "robot", {}).get("state") == "linked", timeout=60)
    assert restored["persistent"] is True
    assert restored["x-vendor"]["peers"]["robot"]["path"] != old_copy  # a new copy
    stream = Stream(p.port, body["event_source"])
    try:
        assert isinstance(stream.next(30)["data"]["payload"]["data"], float)
    finally:
        stream.close()
    assert p.request("DELETE", path).status == 204
    # the copy of the primary's former life ends by its lease; remove it now
    assert mixed.robot.request("DELETE", old_copy).status == 204


def test_a_copy_stream_the_peer_refuses_fails_once_and_leaves_no_copy(mixed: FleetPair) -> None:
    p, r = mixed.primary, mixed.robot
    hogs: list[Stream] = []
    try:
        def hog_all() -> bool:  # take every SSE slot of the robot (earlier streams may
            hog = Stream(r.port, "/api/v1/faults/stream")  # still be letting theirs go)
            if hog.status == 200:
                hogs.append(hog)
            return len(hogs) == ROBOT_SSE
        wait_until(hog_all, 20, "every SSE slot of the robot taken")
        body = create(p, "functions", "engine-monitoring", "triggers",
                      on_change("functions", "engine-monitoring", RPM, path="/data",
                                multishot=True))
        path = f"/functions/engine-monitoring/triggers/{body['id']}"
        detail = p.wait_for(path, lambda b: b["x-vendor"]["peers"]["robot"]["state"]
                            == "failed", timeout=20)
        assert "503" in detail["x-vendor"]["peers"]["robot"]["reason"]
        stream = Stream(p.port, body["event_source"])
        try:
            error = stream.next(10)
            assert error["event"] == "error"
            assert error["data"]["vendor_code"] == "x-vendor-peer-unavailable"
            # the refused copy is deleted, and copies do not pile up while it is retried
            wait_until(lambda: r.get("/functions/engine-monitoring/triggers").json()[
                "items"] == [], 20, "the refused copy deleted")
            for hog in hogs:
                hog.close()
            hogs.clear()
            p.wait_for(path, lambda b: b["x-vendor"]["peers"]["robot"]["state"] == "linked",
                       timeout=60)
            frames = [stream.next(30) for _ in range(2)]
            assert [f["event"] for f in frames] == ["message", "message"]  # one error only
        finally:
            stream.close()
        assert p.request("DELETE", path).status == 204
    finally:
        for hog in hogs:
            hog.close()


def test_a_peer_dying_puts_an_error_event_in_the_mixed_stream(mixed: FleetPair) -> None:
    p = mixed.primary
    body = create(p, "functions", "engine-monitoring", "triggers",
                  on_change("functions", "engine-monitoring", RPM, path="/data",
                            multishot=True))
    stream = Stream(p.port, body["event_source"])
    try:
        assert stream.next(30)["event"] == "message"
        kill_gateway(mixed.robot)
        last = stream.next_event("error", 20)
        assert last["data"]["vendor_code"] == "x-vendor-peer-unavailable"
        assert last["data"]["parameters"] == {"peer": "robot"}
        assert not stream.ended.is_set(), "local members go on streaming"
        detail = p.get(f"/functions/engine-monitoring/triggers/{body['id']}").json()
        assert detail["x-vendor"]["peers"]["robot"]["state"] == "failed"
        # the robot comes back: the copy is created again and its events resume
        mixed.robot.start()
        p.wait_for(f"/functions/engine-monitoring/triggers/{body['id']}",
                   lambda b: b["x-vendor"]["peers"]["robot"]["state"] == "linked", timeout=60)
        stream.drain()
        frame = stream.next(30)
        assert frame["event"] == "message" and isinstance(frame["data"]["payload"]["data"],
                                                          float)
    finally:
        stream.close()
