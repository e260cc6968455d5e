"""Push delivery across a fleet: subscriptions and triggers on a peer's app, through a primary.

The primary (its own temp_sensor; triggers and fault triggers switched off on it) and one robot gateway (a colliding temp_sensor, so the
peer's app has the fleet id `robot__temp_sensor`), each in its own ROS domain of this module.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.fleet.conftest import FleetPair, primary_with_robot
from tests.harness import assert_error
from tests.integration.test_faults_support import kill_gateway
from tests.integration.test_push_support import Stream

pytestmark = pytest.mark.integration

FLEET_ID = "robot__temp_sensor"
TOPIC_PATH = "data/powertrain/engine/temperature"


@pytest.fixture(scope="module")
def push_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetPair]:
    logs = tmp_path_factory.mktemp("pushfleet")
    with primary_with_robot(
            logs, ("temp_sensor",), ("temp_sensor",),
            [f"state_dir={logs / 'robot-state'}", "discovery.refresh_debounce_ms=100",
             "sse.max_clients=10"],
            [f"state_dir={logs / 'primary-state'}", "discovery.refresh_debounce_ms=100",
             "sse.max_clients=10", "triggers.enabled=false", "fault_triggers.enabled=false"]
    ) as pair:
        pair.primary.wait_for("/apps", lambda b: {"temp_sensor", FLEET_ID} <= {
            a["id"] for a in b["items"]}, timeout=40)
        yield pair


def test_subscription_on_a_peer_app_is_forwarded_and_relayed(push_fleet: FleetPair) -> None:
    p = push_fleet.primary
    resp = p.request("POST", f"/apps/{FLEET_ID}/cyclic-subscriptions", {
        "resource": f"/api/v1/apps/{FLEET_ID}/{TOPIC_PATH}", "interval": "fast",
        "duration": 60})
    assert resp.status == 201, resp
    body = resp.json()
    sub_id = body["id"]
    assert resp.headers["location"] == f"/api/v1/apps/{FLEET_ID}/cyclic-subscriptions/{sub_id}"
    assert body["event_source"] == f"/api/v1/apps/{FLEET_ID}/cyclic-subscriptions/{sub_id}/events"
    assert body["observed_resource"] == f"/api/v1/apps/{FLEET_ID}/{TOPIC_PATH}"
    # it lives on the robot, under the robot's own id
    assert push_fleet.robot.get(f"/apps/temp_sensor/cyclic-subscriptions/{sub_id}").status == 200
    listed = p.get(f"/apps/{FLEET_ID}/cyclic-subscriptions").json()["items"]
    assert [s["id"] for s in listed] == [sub_id]
    stream = Stream(p.port, body["event_source"])
    try:
        frames = stream.collect(3)
        assert all(f["data"]["payload"]["id"] == "/powertrain/engine/temperature"
                   for f in frames)
    finally:
        stream.close()


def test_switched_off_features_answer_501_but_peer_apps_still_forward(
        push_fleet: FleetPair) -> None:
    p = push_fleet.primary
    for method, path in (("GET", "/apps/temp_sensor/triggers"),
                         ("GET", "/apps/temp_sensor/triggers/trig_1"),
                         ("DELETE", "/apps/temp_sensor/triggers/trig_1"),
                         ("GET", "/apps/temp_sensor/fault-triggers"),
                         ("DELETE", "/apps/temp_sensor/fault-triggers/ftr_1")):
        assert_error(p.request(method, path), 501)
    assert p.get(f"/apps/{FLEET_ID}/triggers").status == 200  # answered by the robot
    assert p.get("/apps/temp_sensor/cyclic-subscriptions").status == 200


def test_trigger_on_a_peer_app_then_the_peer_dies_mid_stream(push_fleet: FleetPair) -> None:
    p = push_fleet.primary
    resp = p.request("POST", f"/apps/{FLEET_ID}/triggers", {
        "resource": f"/api/v1/apps/{FLEET_ID}/{TOPIC_PATH}", "path": "/header/stamp",
        "trigger_condition": {"condition_type": "OnChange"}, "multishot": True})
    assert resp.status == 201, resp
    trig = resp.json()
    assert resp.headers["location"] == f"/api/v1/apps/{FLEET_ID}/triggers/{trig['id']}"
    assert trig["event_source"] == f"/api/v1/apps/{FLEET_ID}/triggers/{trig['id']}/events"
    stream = Stream(p.port, trig["event_source"])
    try:
        first = stream.next(30)
        assert first["event"] == "message" and "temperature" in first["data"]["payload"]
        killed = time.monotonic()
        kill_gateway(push_fleet.robot)
        last = stream.next_event("error", 15)
        assert last["data"]["vendor_code"] == "x-vendor-peer-unavailable"
        assert last["data"]["parameters"]["peer"] == "robot"
        assert stream.ended.wait(10), "the relayed stream ends after the error event"
        assert time.monotonic() - killed < 15
    finally:
        stream.close()
