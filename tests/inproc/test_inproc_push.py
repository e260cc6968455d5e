"""Push delivery in process (trigger, subscription and fault-trigger handlers): create,
read, change, delete and their errors; a trigger fires and a fault-trigger rule raises its
fault from samples the fake pool hands to the real push engine."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import FLOAT32, PRESSURE, cdr_float32

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
