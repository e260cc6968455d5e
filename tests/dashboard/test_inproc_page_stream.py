"""The dashboard's page stream and the fault stream in process (the dashboard page stream
and the faults handlers): watches accepted and refused, samples tagged by watch, fault events."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import ClientResponse

from gateway.faults.keys import FAULT_SERVICE
from gateway.faults.model import CRITICAL, Report
from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import ACTUATOR, FLOAT32, PRESSURE, cdr_float32

RESOURCE = "/api/v1/apps/actuator/data/chassis/brakes/pressure"
STAMP = 1_700_000_000_000_000_000


async def next_event(resp: ClientResponse) -> tuple[str, Any]:
    """The next SSE event (name, parsed data) of a stream; comments skipped."""
    name, data = "message", None
    while True:
        line = (await asyncio.wait_for(resp.content.readline(), 10)).decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
        elif not line and data is not None:
            return name, data


def _url(gw: Gw) -> str:
    return f"/api/v1/{gw.xv}-page-stream"


def test_a_page_stream_needs_something_to_follow(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", _url(gw), 400)
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == ("a page stream needs something to follow: faults=1 and/or "
                                   "one or more 'watch' resources")
        body = await gw.error("GET", f"{_url(gw)}?faults=maybe", 400)
        assert body["message"] == "'faults' must be 1 (follow the fault stream) or 0"
        body = await gw.error("GET", f"{_url(gw)}?watch=/elsewhere", 400)
        assert body["message"].startswith("'watch' '/elsewhere' is not a resource of an entity")

    gateway(scenario)


def test_watches_and_faults_on_one_stream(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        params = [("watch", RESOURCE), ("watch", "/api/v1/apps/nope/data/x"), ("faults", "1")]
        async with gw.client.get(_url(gw), params=params) as resp:
            assert resp.status == 200
            assert resp.content_type == "text/event-stream"
            name, body = await next_event(resp)
            assert name == "watching"
            assert body["faults"] is True
            assert body["accepted"] == [{"watch": 0, "resource": RESOURCE}]
            (refused,) = body["refused"]
            assert (refused["watch"], refused["status"]) == (1, 404)
            # the watch is a cyclic subscription of this gateway, listed like any other
            status, subs = await gw.json("GET", "/api/v1/apps/actuator/cyclic-subscriptions")
            assert [s["observed_resource"] for s in subs["items"]] == [RESOURCE]
            gw.pool.put(PRESSURE, FLOAT32, cdr_float32(9.5), STAMP)
            name, body = await next_event(resp)
            assert name == "sample" and body["watch"] == 0
            assert body["frame"]["payload"] == {"id": PRESSURE, "data": {"data": 9.5}}
            faults = gw.client.app[FAULT_SERVICE]
            assert faults is not None
            faults.submit([Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "too hot", ACTUATOR)])
            for _ in range(20):  # samples keep coming at the watch's interval
                name, body = await next_event(resp)
                if name != "sample":
                    break
            assert "BRAKE_OVERHEAT" in json.dumps(body), (name, body)
        for _ in range(100):  # the page left: its subscriptions end with it
            status, subs = await gw.json("GET", "/api/v1/apps/actuator/cyclic-subscriptions")
            if not subs["items"]:
                break
            await asyncio.sleep(0.01)
        assert subs["items"] == []

    gateway(scenario)


def test_the_fault_stream_announces_a_new_fault(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.get("/api/v1/faults/stream") as resp:
            assert resp.status == 200 and resp.content_type == "text/event-stream"
            faults = gw.client.app[FAULT_SERVICE]
            assert faults is not None
            faults.submit([Report("PAD_WEAR", "FAILED", CRITICAL, "pads worn", ACTUATOR)])
            name, body = await next_event(resp)
            assert "PAD_WEAR" in json.dumps(body), (name, body)

    gateway(scenario)
