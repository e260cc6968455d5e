"""Push delivery in process (trigger, subscription and fault-trigger handlers): create,
read, change, delete and their errors; a trigger fires and a fault-trigger rule raises its
fault from samples the fake pool hands to the real push engine."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import FLOAT32, HOST, PRESSURE, cdr_float32

APP = "/api/v1/apps/actuator"
RESOURCE = f"{APP}/data/chassis/brakes/pressure"
STAMP = 1_700_000_000_000_000_000


async def first_frame(gw: Gw, url: str) -> dict[str, Any]:
    """The first SSE data frame of a stream."""
    async with gw.client.get(url) as resp:
        assert resp.status == 200
        assert resp.content_type == "text/event-stream"
        while True:
            line = await asyncio.wait_for(resp.content.readline(), 10)
            if line.startswith(b"data: "):
                return json.loads(line[6:])


def test_trigger_lifecycle(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.post(f"{APP}/triggers", json={
                "resource": RESOURCE, "trigger_condition": {"condition_type": "OnChange"},
                "multishot": True}) as resp:
            assert resp.status == 201
            trig = await resp.json()
            assert resp.headers["Location"] == f"{APP}/triggers/{trig['id']}"
        assert trig["observed_resource"] == RESOURCE
        assert (trig["status"], trig["protocol"], trig["multishot"]) == ("active", "sse", True)
        assert trig["event_source"] == f"{APP}/triggers/{trig['id']}/events"
        assert trig[gw.xv] == {"fired": 0}
        assert gw.pool.watched == {PRESSURE: FLOAT32}  # the observed topic is pinned
        status, body = await gw.json("GET", f"{APP}/triggers")
        assert [t["id"] for t in body["items"]] == [trig["id"]]
        status, body = await gw.json("GET", f"{APP}/triggers/{trig['id']}")
        assert status == 200 and body["trigger_condition"] == {"condition_type": "OnChange"}
        status, body = await gw.json("PUT", f"{APP}/triggers/{trig['id']}",
                                     json={"lifetime": 60})
        assert status == 200, body
        status, _ = await gw.json("DELETE", f"{APP}/triggers/{trig['id']}")
        assert status == 204
        status, body = await gw.json("GET", f"{APP}/triggers")
        assert body["items"] == []
        await gw.error("GET", f"{APP}/triggers/{trig['id']}", 404)

    gateway(scenario)


def test_a_trigger_fires_on_a_new_sample(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, trig = await gw.json("POST", f"{APP}/triggers", json={
            "resource": RESOURCE, "trigger_condition": {"condition_type": "OnChange"}})
        assert status == 201, trig
        frame = asyncio.ensure_future(first_frame(gw, trig["event_source"]))
        for _ in range(200):  # until the stream is attached, samples keep coming
            gw.pool.put(PRESSURE, FLOAT32, cdr_float32(12.0 + _), STAMP + _)
            await asyncio.sleep(0.01)
            if frame.done():
                break
        event = await asyncio.wait_for(frame, 10)
        assert "payload" in event, event
        assert set(event) == {"timestamp", "payload"}, event
        assert event["payload"]["data"] >= 12.0  # the observed value (the first change)

    gateway(scenario)


def test_trigger_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", f"{APP}/triggers", 400, json={})
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == ("'trigger_condition' must be an object with a string "
                                   "'condition_type' (OnChange, OnChangeTo, EnterRange, "
                                   "LeaveRange)")
        body = await gw.error("POST", f"{APP}/triggers", 400, json={
            "resource": f"{APP}/data/a//b", "trigger_condition": {"condition_type": "OnChange"}})
        assert "empty path segment" in body["message"]
        body = await gw.error("GET", f"{APP}/triggers/nope", 404)
        assert body["error_code"] == "resource-not-found"
        assert body["message"] == "Trigger 'nope' not found on app 'actuator'"
        assert body["parameters"] == {"entity_id": "actuator", "trigger_id": "nope"}
        await gw.error("GET", f"{APP}/triggers/nope/events", 404)
        await gw.error("POST", "/api/v1/apps/nope/triggers", 404, json={
            "resource": RESOURCE, "trigger_condition": {"condition_type": "OnChange"}})

    gateway(scenario)


def test_cyclic_subscription_lifecycle(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, sub = await gw.json("POST", f"{APP}/cyclic-subscriptions", json={
            "resource": RESOURCE, "interval": "fast", "duration": 5})
        assert status == 201, sub
        assert (sub["observed_resource"], sub["interval"], sub["duration"]) == (
            RESOURCE, "fast", 5)
        assert sub["event_source"] == f"{APP}/cyclic-subscriptions/{sub['id']}/events"
        assert "expires_at" in sub[gw.xv]
        status, body = await gw.json("GET", f"{APP}/cyclic-subscriptions")
        assert [s["id"] for s in body["items"]] == [sub["id"]]
        status, body = await gw.json("PUT", f"{APP}/cyclic-subscriptions/{sub['id']}",
                                     json={"interval": "slow"})
        assert status == 200 and body["interval"] == "slow"
        status, _ = await gw.json("DELETE", f"{APP}/cyclic-subscriptions/{sub['id']}")
        assert status == 204
        await gw.error("GET", f"{APP}/cyclic-subscriptions/{sub['id']}", 404)
        status, body = await gw.json("GET", f"{APP}/cyclic-subscriptions")
        assert body["items"] == []

    gateway(scenario)


def test_a_cyclic_subscription_delivers_and_ends_with_its_client(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, sub = await gw.json("POST", f"{APP}/cyclic-subscriptions", json={
            "resource": RESOURCE, "interval": "fast", "duration": 5})
        assert status == 201, sub
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(7.5), STAMP)
        frame = await first_frame(gw, sub["event_source"])
        assert frame["payload"] == {"id": PRESSURE, "data": {"data": 7.5}}
        assert set(frame) == {"timestamp", "payload"}
        for _ in range(100):  # the client left: the subscription ends (interface.md)
            status, _ = await gw.json("GET", f"{APP}/cyclic-subscriptions/{sub['id']}")
            if status == 404:
                break
            await asyncio.sleep(0.01)
        assert status == 404

    gateway(scenario)


def test_cyclic_subscription_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", f"{APP}/cyclic-subscriptions", 400,
                              json={"interval": "fast"})
        assert body["error_code"] == "invalid-parameter"
        assert body["message"].startswith("'resource' is required")
        assert body["parameters"] == {"parameter": "resource"}
        body = await gw.error("POST", f"{APP}/cyclic-subscriptions", 400,
                              json={"resource": RESOURCE, "interval": "sometimes"})
        assert "interval" in body["message"]
        body = await gw.error("GET", f"{APP}/cyclic-subscriptions/nope", 404)
        assert body["message"] == "Cyclic subscription 'nope' not found on app 'actuator'"
        assert body["parameters"] == {"entity_id": "actuator", "subscription_id": "nope"}

    gateway(scenario)


def test_a_fault_trigger_rule_raises_its_fault(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        rule_body = {"data_name": PRESSURE, "operator": ">", "threshold": 50,
                     "fault_code": "PRESSURE_HIGH", "severity": "CRITICAL"}
        status, rule = await gw.json("POST", f"{APP}/fault-triggers", json=rule_body)
        assert status == 201, rule
        assert rule["id"].startswith("ftr")
        assert (rule["fault_code"], rule["operator"], rule["threshold"], rule["active"]) == (
            "PRESSURE_HIGH", ">", 50, True)
        status, body = await gw.json("GET", f"{APP}/fault-triggers")
        assert [r["id"] for r in body["items"]] == [rule["id"]]
        body = await gw.error("POST", f"{APP}/fault-triggers", 409, json=rule_body)
        assert "PRESSURE_HIGH" in body["message"]
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(75.0), STAMP)
        codes: list[str] = []
        for _ in range(300):
            status, body = await gw.json("GET", "/api/v1/faults")
            codes = [i["fault_code"] for i in body["items"]]
            if codes:
                break
            await asyncio.sleep(0.02)
        assert codes == ["PRESSURE_HIGH"]
        status, _ = await gw.json("DELETE", f"{APP}/fault-triggers/{rule['id']}")
        assert status == 204
        await gw.error("GET", f"{APP}/fault-triggers/{rule['id']}", 404)

    gateway(scenario, settings=("fault_triggers.poll_interval_ms=50",))


def test_fault_trigger_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", f"{APP}/fault-triggers", 400, json={
            "data_name": PRESSURE, "operator": "~", "threshold": 1, "fault_code": "X"})
        assert body["error_code"] == "invalid-parameter"
        assert body["message"].startswith("'operator' must be one of")
        body = await gw.error("POST", f"{APP}/fault-triggers", 400, json={
            "data_name": "/chassis/brakes/presure", "operator": ">", "threshold": 1,
            "fault_code": "X"})
        assert body["message"] == ("App 'actuator' has no data item '/chassis/brakes/presure'; "
                                   f"did you mean '{PRESSURE}'?")
        body = await gw.error("GET", f"{APP}/fault-triggers/nope", 404)
        assert body["message"] == "Fault trigger 'nope' not found on app 'actuator'"
        # apps only: no route on functions (the medkit profile names the collection)
        url = "/api/v1/functions/chassis/fault-triggers"
        if gw.profile == "medkit":
            body = await gw.error("GET", url, 400)
            assert body["error_code"] == "collection-not-supported"
            assert body["message"] == ("Function entities do not support fault-triggers "
                                       "collection")
            assert body["parameters"] == {"entity_id": "chassis",
                                          "collection": "fault-triggers"}
        else:
            body = await gw.error("GET", url, 404)
            assert body["message"] == f"No resource at {url}"

    gateway(scenario)


SCAN = "/api/v1/apps/scanner/data/sensors/lidar/status"


async def frames(gw: Gw, url: str, count: int, send: Callable[[], Awaitable[None]]
                 ) -> list[dict[str, Any]]:
    """The first `count` SSE data frames of a stream; `send()` runs once it is open."""
    got: list[dict[str, Any]] = []
    async with gw.client.get(url) as resp:
        assert resp.status == 200
        await send()
        while len(got) < count:
            line = await asyncio.wait_for(resp.content.readline(), 10)
            if line.startswith(b"data: "):
                got.append(json.loads(line[6:]))
    return got


async def put_values(gw: Gw, *values: float) -> None:
    """Samples of the pressure topic, one loop turn apart."""
    for k, value in enumerate(values):
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(value), STAMP + k)
        await asyncio.sleep(0.01)


async def trigger(gw: Gw, condition: dict[str, Any], **extra: Any) -> dict[str, Any]:
    status, body = await gw.json("POST", f"{APP}/triggers", json={
        "resource": RESOURCE, "trigger_condition": condition, **extra})
    assert status == 201, body
    return dict(body)


@pytest.mark.parametrize(("condition", "values", "expected"), [
    ({"condition_type": "OnChange"}, [0, 0, 1, 1, 2.0, 2], [0, 1, 2]),
    ({"condition_type": "OnChangeTo", "target_value": 5}, [3, 5, 5, 4, 5.0], [5, 5]),
    ({"condition_type": "EnterRange", "lower_bound": 10, "upper_bound": 20},
     [15, 9, 10, 20, 21, 20, 25, 9], [10, 20]),
    ({"condition_type": "LeaveRange", "lower_bound": 10, "upper_bound": 20},
     [25, 20, 20.5, 15, 10, 9.5, 9], [20.5, 9.5]),
])
def test_condition_types_fire_on_their_edges(gateway: Runner, condition: dict[str, Any],
                                             values: list[float], expected: list[float]
                                             ) -> None:
    async def scenario(gw: Gw) -> None:
        trig = await trigger(gw, condition, path="/data", multishot=True)
        assert trig["trigger_condition"] == condition and trig["status"] == "active"
        got = await frames(gw, trig["event_source"], len(expected),
                           lambda: put_values(gw, *values))
        assert [f["payload"]["data"] for f in got] == expected
        await put_values(gw, values[-1], values[-1])  # no change: nothing more fires
        status, body = await gw.json("GET", f"{APP}/triggers/{trig['id']}")
        assert body[gw.xv]["fired"] == len(expected)

    gateway(scenario)


def test_a_one_shot_trigger_ends_after_firing(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        trig = await trigger(gw, {"condition_type": "OnChangeTo", "target_value": 42},
                             path="/data")
        assert trig["multishot"] is False
        async with gw.client.get(trig["event_source"]) as resp:
            assert resp.status == 200
            await put_values(gw, 41, 42)
            body = await asyncio.wait_for(resp.content.read(), 10)  # closes after one event
        (event,) = [json.loads(line[6:]) for line in body.split(b"\n")
                    if line.startswith(b"data: ")]
        assert event["payload"] == {"data": 42.0}
        await gw.error("GET", f"{APP}/triggers/{trig['id']}", 404)

    gateway(scenario)


def test_a_trigger_lifetime_put_and_delete(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        trig = await trigger(gw, {"condition_type": "OnChange"}, lifetime=1)
        path = f"{APP}/triggers/{trig['id']}"
        for _ in range(500):
            status, _ = await gw.json("GET", path)
            if status == 404:
                break
            await asyncio.sleep(0.02)
        assert status == 404, "the trigger expires"
        trig = await trigger(gw, {"condition_type": "OnChange"}, lifetime=1)
        path = f"{APP}/triggers/{trig['id']}"
        status, body = await gw.json("PUT", path, json={"lifetime": 600})
        assert (status, body["lifetime"]) == (200, 600)
        body = await gw.error("PUT", path, 400, json={"lifetime": 0})
        assert body["error_code"] == "invalid-parameter"
        await asyncio.sleep(1.5)  # past the first lifetime: the new one holds
        status, _ = await gw.json("GET", path)
        assert status == 200
        await gw.error("GET", f"/api/v1/apps/monitor/triggers/{trig['id']}", 404)
        async with gw.client.get(trig["event_source"]) as resp:
            assert resp.status == 200
            status, _ = await gw.json("DELETE", path)
            assert status == 204
            await asyncio.wait_for(resp.content.read(), 10)  # the stream closes
        await gw.error("DELETE", path, 404)
        await gw.error("GET", f"{path}/events", 404)

    gateway(scenario)


ON_CHANGE = {"condition_type": "OnChange"}


@pytest.mark.parametrize(("body", "code", "vendor"), [
    ({"resource": RESOURCE}, "invalid-parameter", None),
    ({"resource": RESOURCE, "trigger_condition": {"condition_type": "Sometimes"}},
     "invalid-parameter", None),
    ({"resource": RESOURCE, "trigger_condition": {"condition_type": "EnterRange",
                                                  "lower_bound": 3}},
     "invalid-parameter", None),
    ({"resource": RESOURCE, "lifetime": -5, "trigger_condition": ON_CHANGE},
     "invalid-parameter", None),
    ({"resource": RESOURCE, "path": "data", "trigger_condition": ON_CHANGE},
     "invalid-parameter", None),
    ({"resource": f"{APP}/locks", "trigger_condition": ON_CHANGE}, "invalid-parameter", None),
    ({"resource": f"{APP}/data/../x", "trigger_condition": ON_CHANGE}, "vendor-error",
     "invalid-resource-uri"),
    ({"resource": SCAN, "trigger_condition": ON_CHANGE}, "vendor-error", "entity-mismatch"),
])
def test_trigger_create_errors(gateway: Runner, body: dict[str, Any], code: str,
                               vendor: str | None) -> None:
    async def scenario(gw: Gw) -> None:
        err = await gw.error("POST", f"{APP}/triggers", 400, json=body)
        assert err["error_code"] == code, err
        if vendor is not None:
            assert err["vendor_code"] == f"{gw.xv}-{vendor}", err
        status, listing = await gw.json("GET", f"{APP}/triggers")
        assert listing["items"] == []

    gateway(scenario)


@pytest.mark.parametrize(("body", "code", "vendor"), [
    ({"resource": RESOURCE, "interval": "sometimes"}, "invalid-parameter", None),
    ({"resource": RESOURCE, "interval": "fast", "duration": 0}, "invalid-parameter", None),
    ({"resource": RESOURCE, "interval": "fast", "duration": 3601}, "invalid-parameter", None),
    ({"resource": f"{APP}/data", "interval": "fast"}, "vendor-error", "invalid-resource-uri"),
    ({"resource": f"{APP}/data/../faults", "interval": "fast"}, "vendor-error",
     "invalid-resource-uri"),
    ({"resource": f"{APP}/faults/X", "interval": "fast"}, "vendor-error",
     "invalid-resource-uri"),
    ({"resource": SCAN, "interval": "fast"}, "vendor-error", "entity-mismatch"),
    ({"resource": f"{APP}/bulk-data", "interval": "fast"}, "vendor-error",
     "collection-not-supported"),
    ({"resource": f"{APP}/x-plc-data", "interval": "fast"}, "vendor-error",
     "collection-not-available"),
    ({"resource": RESOURCE, "interval": "fast", "protocol": "ws"}, "vendor-error",
     "unsupported-protocol"),
])
def test_subscription_create_errors(gateway: Runner, body: dict[str, Any], code: str,
                                    vendor: str | None) -> None:
    async def scenario(gw: Gw) -> None:
        err = await gw.error("POST", f"{APP}/cyclic-subscriptions", 400, json=body)
        assert err["error_code"] == code, err
        if vendor is not None:
            assert err["vendor_code"] == f"{gw.xv}-{vendor}", err
        status, listing = await gw.json("GET", f"{APP}/cyclic-subscriptions")
        assert listing["items"] == []

    gateway(scenario)


def test_a_subscription_put_changes_only_what_it_names(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, sub = await gw.json("POST", f"{APP}/cyclic-subscriptions", json={
            "resource": RESOURCE, "interval": "slow", "duration": 60})
        assert status == 201, sub
        path = f"{APP}/cyclic-subscriptions/{sub['id']}"
        before = sub[gw.xv]["expires_at"]
        status, body = await gw.json("PUT", path, json={"interval": "fast"})
        assert (status, body["interval"], body[gw.xv]["expires_at"]) == (200, "fast", before)
        status, body = await gw.json("PUT", path, json={"duration": 600})
        assert (status, body["duration"]) == (200, 600)
        assert body[gw.xv]["expires_at"] > before  # the expiry restarts
        for change in ({"duration": 0}, {"interval": "sometimes"}):
            body = await gw.error("PUT", path, 400, json=change)
            assert body["error_code"] == "invalid-parameter"
        await gw.error("GET", f"/api/v1/functions/chassis/cyclic-subscriptions/{sub['id']}",
                       404)
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(1.0), STAMP)
        async with gw.client.get(sub["event_source"]) as resp:
            assert resp.status == 200
            await resp.content.readline()  # the stream is open
            status, _ = await gw.json("DELETE", path)
            assert status == 204
            await asyncio.wait_for(resp.content.read(), 10)  # a deleted one's stream closes
        await gw.error("GET", path, 404)
        await gw.error("DELETE", path, 404)

    gateway(scenario)


def test_subscription_capacity_and_routes(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await gw.error("POST", "/api/v1/apps/ghost/cyclic-subscriptions", 404, json={
            "resource": "/api/v1/apps/ghost/faults", "interval": "fast"})
        status, body = await gw.json("GET", "/api/v1/areas/x/cyclic-subscriptions")
        if gw.profile == "medkit":  # areas have no cyclic subscriptions
            assert (status, body["error_code"]) == (400, "collection-not-supported")
        else:
            assert status in (404, 405)
        for _ in range(4):
            status, body = await gw.json("POST", f"{APP}/cyclic-subscriptions", json={
                "resource": RESOURCE, "interval": "slow", "duration": 60})
            assert status == 201, body
        body = await gw.error("POST", f"{APP}/cyclic-subscriptions", 503, json={
            "resource": RESOURCE, "interval": "slow", "duration": 60})
        assert body["error_code"] == "service-unavailable"
        status, listing = await gw.json("GET", f"{APP}/cyclic-subscriptions")
        assert len(listing["items"]) == 4

    gateway(scenario, settings=("sse.max_subscriptions=4",))


@pytest.mark.parametrize("body", [
    {"data_name": PRESSURE, "operator": "!", "threshold": 1, "fault_code": "X1"},
    {"data_name": PRESSURE, "operator": ">", "fault_code": "X1"},
    {"data_name": "/chassis/brakes/presure", "operator": ">", "threshold": 1,
     "fault_code": "X1"},
])
def test_fault_trigger_body_errors(gateway: Runner, body: dict[str, Any]) -> None:
    async def scenario(gw: Gw) -> None:
        err = await gw.error("POST", f"{APP}/fault-triggers", 400, json=body)
        assert err["error_code"] == "invalid-parameter"
        await gw.error("POST", "/api/v1/apps/ghost/fault-triggers", 404, json=body)
        status, _ = await gw.json("GET", f"/api/v1/components/{HOST}/fault-triggers")
        assert status in (400, 404, 405)  # apps only
        status, listing = await gw.json("GET", f"{APP}/fault-triggers")
        assert listing["items"] == []

    gateway(scenario)


def test_fault_trigger_rules_stop_at_the_cap(gateway: Runner) -> None:
    def rule(code: str) -> dict[str, Any]:
        return {"data_name": PRESSURE, "operator": ">", "threshold": 5, "fault_code": code}

    async def scenario(gw: Gw) -> None:
        made = []
        for n in range(3):
            status, body = await gw.json("POST", f"{APP}/fault-triggers", json=rule(f"CAP_{n}"))
            assert status == 201, body
            made.append(body["id"])
        err = await gw.error("POST", f"{APP}/fault-triggers", 503, json=rule("CAP_X"))
        assert err["error_code"] == "service-unavailable"
        assert "fault_triggers.max_rules" in err["message"] and "3" in err["message"]
        status, body = await gw.json("GET", f"{APP}/fault-triggers")
        assert len(body["items"]) == 3
        status, _ = await gw.json("DELETE", f"{APP}/fault-triggers/{made[0]}")
        assert status == 204
        status, _ = await gw.json("POST", f"{APP}/fault-triggers", json=rule("CAP_X"))
        assert status == 201

    gateway(scenario, settings=("fault_triggers.max_rules=3",))
