"""Push delivery on aggregates, in process, on the fake demo robot behind the shipped manifest
(hybrid): area, component and function triggers and subscriptions see their member apps and no
others; triggers and subscriptions of an app that left discovery end after the grace period;
a one-shot firing nobody watched waits for the next client, once."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import ClientResponse

from gateway.faults.model import CRITICAL, Report
from tests.inproc.inproc_demo import TEMPERATURE, TEMPERATURE_TOPIC, demo_nodes, run_demo
from tests.inproc.inproc_gateway import Gw, Runner, Scenario
from tests.inproc.inproc_robot import FakeNode

API = "/api/v1"
TOPIC = f"data{TEMPERATURE_TOPIC}"
LIDAR = "/perception/lidar/lidar_sensor"
PROBE = "/push_area_test/vanishing_probe"
STAMP = 1_700_000_000_000_000_000
ERROR = 40  # rcl_interfaces/Log ERROR


def demo(gateway: Runner, scenario: Scenario, nodes: list[FakeNode] | None = None) -> None:
    run_demo(gateway, scenario, ("sse.max_clients=20", "triggers.orphan_grace_sec=1.0"),
             nodes=nodes)


def put_temperature(gw: Gw, value: float, k: int = 0) -> None:
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Temperature

    gw.pool.put(TEMPERATURE_TOPIC, TEMPERATURE,
                serialize_message(Temperature(temperature=value, variance=0.25)), STAMP + k)


async def trigger(gw: Gw, kind: str, eid: str, collection: str, condition: str = "OnChange",
                  params: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    status, body = await gw.json("POST", f"{API}/{kind}/{eid}/triggers", json={
        "resource": f"{API}/{kind}/{eid}/{collection}",
        "trigger_condition": {"condition_type": condition, **(params or {})}, **extra})
    assert status == 201, body
    return dict(body)


class Stream:
    """An open SSE stream: its data frames one by one."""

    def __init__(self, resp: ClientResponse) -> None:
        self.resp = resp

    async def next(self, timeout: float = 10.0) -> dict[str, Any]:
        while True:
            line = await asyncio.wait_for(self.resp.content.readline(), timeout)
            assert line, "the stream ended"
            if line.startswith(b"data: "):
                return dict(json.loads(line[6:]))

    async def rest(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The frames until the server ends the stream."""
        body = await asyncio.wait_for(self.resp.content.read(), timeout)
        return [json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]


@asynccontextmanager
async def stream(gw: Gw, url: str) -> AsyncIterator[Stream]:
    async with gw.client.get(url) as resp:
        assert resp.status == 200, await resp.text()
        yield Stream(resp)


async def until(check: Callable[[], Any], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def delete(gw: Gw, path: str) -> None:
    status, body = await gw.json("DELETE", path)
    assert status == 204, body


@pytest.mark.parametrize(("kind", "eid"), [("areas", "engine"), ("areas", "powertrain"),
                                           ("functions", "engine-monitoring"),
                                           ("components", "engine-ecu")])
def test_data_trigger_on_an_aggregate_sees_its_member_topic(gateway: Runner, kind: str,
                                                           eid: str) -> None:
    async def scenario(gw: Gw) -> None:
        # engine-ecu hosts no temperature publisher itself, its subcomponent's app does
        body = await trigger(gw, kind, eid, TOPIC, path="/temperature", multishot=True)
        async with stream(gw, body["event_source"]) as events:
            put_temperature(gw, 85.0)
            first = await events.next()
            put_temperature(gw, 85.5, 1)
            second = await events.next()
        assert [f["payload"]["temperature"] for f in (first, second)] == [85.0, 85.5]
        path = f"{API}/{kind}/{eid}/triggers/{body['id']}"
        status, detail = await gw.json("GET", path)
        assert detail[gw.xv]["topic"] == TEMPERATURE_TOPIC
        await delete(gw, path)

    demo(gateway, scenario)


def test_area_fault_and_log_triggers_see_member_apps_and_not_others(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        faults = await trigger(gw, "areas", "perception", "faults", multishot=True)
        logs = await trigger(gw, "areas", "perception", "logs", path="/severity",
                             condition="OnChangeTo", params={"target_value": "error"},
                             multishot=True)
        elsewhere = await trigger(gw, "areas", "chassis", "faults", multishot=True)
        temp_logs = await trigger(gw, "areas", "engine", "logs", path="/message",
                                  multishot=True)
        async with stream(gw, faults["event_source"]) as fault_events, \
                stream(gw, logs["event_source"]) as log_events:
            await gw.report_faults(Report("LIDAR_RANGE_INVALID", "FAILED", CRITICAL,
                                          "min_range > max_range", LIDAR))
            fault = (await fault_events.next())["payload"]
            assert fault["fault_code"] == "LIDAR_RANGE_INVALID"
            assert any("lidar" in s for s in fault["reporting_sources"])
            gw.bridge.rosout("perception.lidar.lidar_sensor", ERROR,
                             "[LIDAR_RANGE_INVALID] min_range > max_range", STAMP)
            entry = (await log_events.next())["payload"]
            assert entry["severity"] == "error" and "LIDAR_" in entry["message"]
        # chassis saw none of it, engine no lidar log
        status, body = await gw.json("GET", f"{API}/areas/chassis/triggers/{elsewhere['id']}")
        assert body[gw.xv]["fired"] == 0
        status, body = await gw.json("GET", f"{API}/areas/engine/triggers/{temp_logs['id']}")
        assert body[gw.xv]["fired"] == 0
        for kind, eid, trig in (("areas", "perception", faults), ("areas", "perception", logs),
                                ("areas", "chassis", elsewhere), ("areas", "engine", temp_logs)):
            await delete(gw, f"{API}/{kind}/{eid}/triggers/{trig['id']}")

    demo(gateway, scenario)


def test_cyclic_subscriptions_on_function_and_component_cover_members(
        gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, sub = await gw.json(
            "POST", f"{API}/functions/engine-monitoring/cyclic-subscriptions", json={
                "resource": f"{API}/functions/engine-monitoring/{TOPIC}", "interval": "fast",
                "duration": 30})
        assert status == 201, sub
        put_temperature(gw, 90.0)
        async with stream(gw, sub["event_source"]) as events:
            frames = [await events.next() for _ in range(3)]
        assert {f["payload"]["id"] for f in frames} == {TEMPERATURE_TOPIC}
        status, sub = await gw.json(
            "POST", f"{API}/components/perception-computer/cyclic-subscriptions", json={
                "resource": f"{API}/components/perception-computer/faults",
                "interval": "fast", "duration": 30})
        assert status == 201, sub
        await gw.report_faults(Report("LIDAR_FREQ_UNSUPPORTED", "FAILED", CRITICAL,
                                      "25 Hz", LIDAR))
        async with stream(gw, sub["event_source"]) as events:
            payload = (await events.next())["payload"]
        items = payload["items" if gw.profile == "medkit" else "data"]  # the profile's list
        assert [i["fault_code"] for i in items] == ["LIDAR_FREQ_UNSUPPORTED"]

    demo(gateway, scenario)


def test_one_shot_firing_with_no_client_waits_for_the_next_client_once(
        gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await trigger(gw, "areas", "engine", TOPIC, path="/temperature")
        path = f"{API}/areas/engine/triggers/{body['id']}"
        put_temperature(gw, 88.0)

        async def gone() -> bool:
            return (await gw.json("GET", path))[0] == 404

        await until(gone, "the one-shot trigger fired and ended")
        async with stream(gw, body["event_source"]) as events:
            frames = await events.rest()  # the held event, then the stream ends
        assert [f["payload"]["temperature"] for f in frames] == [88.0], frames
        await gw.error("GET", body["event_source"], 404)  # handed out once
        # another entity cannot take it
        other = await trigger(gw, "areas", "perception", "logs")
        gw.bridge.rosout("perception.lidar.lidar_sensor", ERROR, "[LIDAR] once", STAMP)

        async def fired() -> bool:
            return (await gw.json("GET", f"{API}/areas/perception/triggers/{other['id']}")
                    )[0] == 404

        await until(fired, "the perception one-shot fired")
        await gw.error("GET", other["event_source"].replace("perception", "engine"), 404)

    demo(gateway, scenario)


def test_triggers_and_subscriptions_end_when_their_entity_leaves(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        app = f"{API}/apps/vanishing_probe"
        trig = await trigger(gw, "apps", "vanishing_probe", "faults", multishot=True)
        status, sub = await gw.json("POST", f"{app}/cyclic-subscriptions", json={
            "resource": f"{app}/faults", "interval": "slow", "duration": 600})
        assert status == 201, sub
        # a trigger nobody watches fires before the app leaves: its event is held
        unwatched = await trigger(gw, "apps", "vanishing_probe", "faults", multishot=True)
        await gw.report_faults(Report("VANISHING_PROBE_FAULT", "FAILED", CRITICAL,
                                      "about to vanish", PROBE))

        async def fired() -> bool:
            status, body = await gw.json("GET", f"{app}/triggers/{unwatched['id']}")
            return bool(body[gw.xv]["fired"] >= 1)

        await until(fired, "the unwatched trigger fired")
        status, health = await gw.json("GET", f"{API}/health")
        before = health[f"{gw.xv}-push"]["orphans_ended"]
        async with stream(gw, trig["event_source"]) as events:
            gw.nodes[:] = [n for n in gw.nodes if n.fqn != PROBE]
            gw.regraph()
            await events.rest(20)  # the trigger's stream closed once its app left

        async def ended() -> bool:
            status, health = await gw.json("GET", f"{API}/health")
            return bool(health[f"{gw.xv}-push"]["orphans_ended"] >= before + 3)

        await until(ended, "the triggers and the subscription ended as orphans")
        await gw.error("GET", app, 404)
        async with stream(gw, unwatched["event_source"]) as events:
            frames = await events.rest()
        assert [f["payload"]["fault_code"] for f in frames] == ["VANISHING_PROBE_FAULT"]
        # the ids stay gone should the app come back
        gw.nodes.append(FakeNode("vanishing_probe", "/push_area_test"))
        gw.regraph()
        assert (await gw.json("GET", app))[0] == 200
        await gw.error("GET", f"{app}/triggers/{trig['id']}", 404)
        await gw.error("GET", f"{app}/cyclic-subscriptions/{sub['id']}", 404)

    demo(gateway, scenario, [*demo_nodes(), FakeNode("vanishing_probe", "/push_area_test")])


def test_area_operations_trigger_sees_a_member_service_call(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        ops = await trigger(gw, "areas", "perception", "operations", multishot=True)
        async with stream(gw, ops["event_source"]) as events:
            status, body = await gw.json(
                "POST", f"{API}/apps/lidar_sensor/operations/calibrate/executions", json={})
            assert status in (200, 202), body
            payload = (await events.next())["payload"]
        assert "calibrate" in payload["service_path"] and payload["status"] == "completed"
        await delete(gw, f"{API}/areas/perception/triggers/{ops['id']}")

    demo(gateway, scenario)
