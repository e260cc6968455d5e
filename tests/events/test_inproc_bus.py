"""The event bus in process: a fault change reaches a bus listener and the recorder once; a
/rosout record reaches a log trigger through the bus, resolved to its app."""

from __future__ import annotations

import asyncio
import json
import types
from typing import Any

from gateway.events import FAULTS, LOGS, Event
from gateway.faults.bus_events import FaultChange
from gateway.faults.keys import FAULT_SERVICE
from gateway.faults.model import CRITICAL, Report
from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import ACTUATOR

APP = "/api/v1/apps/actuator"


async def report(gw: Gw, *reports: Report) -> None:
    """Hand reports to the fault manager and wait for their commit and publication."""
    faults = gw.client.app[FAULT_SERVICE]
    faults.submit(reports)
    for _ in range(100):  # the flush runs on the next loop turns
        await asyncio.sleep(0.01)
        if faults.stats["reports_applied"] >= faults.stats["reports_received"]:
            break
    await faults.settled()
    await asyncio.sleep(0)  # the commit's callback publishes


def test_a_fault_change_reaches_a_bus_listener_and_the_recorder_once(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        seen: list[Event[Any]] = []
        gw.state.events.subscribe([FAULTS], seen.append)
        await report(gw, Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "too hot", ACTUATOR))
        (event,) = seen
        assert (event.entity_id, event.resource, event.change) == (
            "actuator", "BRAKE_OVERHEAT", "created")
        change = event.payload
        assert isinstance(change, FaultChange)
        assert (change.fault.status, change.confirmed_now, change.event_type) == (
            "CONFIRMED", True, "fault_confirmed")
        status, health = await gw.json("GET", "/api/v1/health")
        recorder = health[f"{gw.xv}-recorder"]
        assert (recorder["windows_opened"], recorder["faults_attached"]) == (1, 0)
        assert recorder["open_windows"] == 1

    gateway(scenario, settings=("snapshots.rosbag.enabled=true",
                                "snapshots.rosbag.duration_after_sec=30"))


def test_fault_changes_build_no_event_while_nobody_listens(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        bus = gw.state.events
        assert not bus.has_listeners(FAULTS)  # no recorder, no fault-collection trigger
        before = bus.stats()["published"]
        await report(gw, Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "too hot", ACTUATOR))
        assert gw.client.app[FAULT_SERVICE].stats["events_published"] == 1  # the stream's
        assert bus.stats()["published"] == before

    gateway(scenario)


def _rosout(gw: Gw) -> Any:
    """The gateway's /rosout subscription callback (the fake node records it)."""
    return next(cb for topic, cb in gw.bridge.node.subscriptions if topic == "/rosout")


def _log(text: str, level: int = 40) -> Any:
    return types.SimpleNamespace(stamp=types.SimpleNamespace(sec=1_700_000_000, nanosec=5),
                                 level=level, name=ACTUATOR.strip("/").replace("/", "."),
                                 msg=text, file="", function="", line=0)


async def first_frame(gw: Gw, url: str, send: Any) -> dict[str, Any]:
    """The first SSE data frame of a stream; `send()` runs once the stream is open."""
    async with gw.client.get(url) as resp:
        assert resp.status == 200
        send()
        while True:
            line = await asyncio.wait_for(resp.content.readline(), 10)
            if line.startswith(b"data: "):
                return json.loads(line[6:])


def test_a_rosout_record_fires_a_log_trigger_through_the_bus(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        bus = gw.state.events
        assert not bus.has_listeners(LOGS)  # no log trigger: records are not handed over
        status, trig = await gw.json("POST", f"{APP}/triggers", json={
            "resource": f"{APP}/logs", "trigger_condition": {"condition_type": "OnChange"}})
        assert status == 201, trig
        assert bus.has_listeners(LOGS)
        on_log = _rosout(gw)
        frame = await first_frame(gw, trig["event_source"], lambda: on_log(_log("brake hot")))
        entry = frame["payload"]
        assert entry["message"] == "brake hot" and entry["severity"] == "error"
        assert entry["context"] == {"node": ACTUATOR} and entry["id"].startswith("log_")
        assert not bus.has_listeners(LOGS)  # the one-shot trigger ended: nobody listens

    gateway(scenario)
