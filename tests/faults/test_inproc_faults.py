"""Faults and logs in process (the faults and logs handlers): the real fault manager and its
store, fed through FaultService.submit; the real RosoutLog fed through RosoutLog.add."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from gateway.faults.keys import FAULT_SERVICE
from gateway.faults.model import CRITICAL, ERROR, INFO, WARN, Report
from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import ACTUATOR, FLOAT32, MONITOR, PRESSURE, cdr_float32

FAULTS = "/api/v1/apps/actuator/faults"
STAMP = 1_700_000_000_000_000_000


async def report(gw: Gw, *reports: Report) -> None:
    """Hand reports to the fault manager and wait for their commit."""
    faults = gw.client.app[FAULT_SERVICE]
    assert faults is not None
    faults.submit(reports)
    for _ in range(100):  # the flush runs on the next loop turns
        await asyncio.sleep(0.01)
        if faults.stats["reports_applied"] >= faults.stats["reports_received"]:
            break
    await faults.settled()


def test_a_reported_fault_is_listed_on_its_app(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await report(gw, Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "too hot", ACTUATOR))
        status, body = await gw.json("GET", FAULTS)
        assert status == 200
        (item,) = body["items"]
        assert item["fault_code"] == "BRAKE_OVERHEAT"
        assert item["severity"] == ("CRITICAL" if gw.profile == "spec" else 3)
        assert (item["status"], item["description"]) == ("CONFIRMED", "too hot")
        assert item["reporting_sources"] == [ACTUATOR]
        assert body[gw.xv]["source_id"] == ACTUATOR
        status, body = await gw.json("GET", "/api/v1/faults")
        assert [i["fault_code"] for i in body["items"]] == ["BRAKE_OVERHEAT"]
        # the function of the app sees it; the other function does not
        status, body = await gw.json("GET", "/api/v1/functions/chassis/faults")
        assert [i["fault_code"] for i in body["items"]] == ["BRAKE_OVERHEAT"]
        status, body = await gw.json("GET", "/api/v1/functions/sensors/faults")
        assert body["items"] == []
        status, body = await gw.json("GET", "/api/v1/apps/monitor/faults")
        assert body["items"] == []

    gateway(scenario)


def test_fault_detail_with_its_freeze_frame(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(42.5), STAMP)
        await report(gw, Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "too hot", ACTUATOR))
        faults = gw.client.app[FAULT_SERVICE]
        assert faults is not None
        for _ in range(100):  # the capture of the app's topics follows the confirmation
            status, body = await gw.json("GET", f"{FAULTS}/BRAKE_OVERHEAT")
            if body["environment_data"]["snapshots"]:
                break
            await asyncio.sleep(0.02)
        assert status == 200
        assert body["item"]["code"] == "BRAKE_OVERHEAT"
        assert body["item"]["fault_name"] == "too hot"
        assert body["item"]["severity"] == 3
        assert body["item"]["status"] == {"aggregatedStatus": "active", "testFailed": "1",
                                          "confirmedDTC": "1", "pendingDTC": "0"}
        (frame,) = body["environment_data"]["snapshots"]
        assert (frame["type"], frame["name"], frame["data"]) == ("freeze_frame", PRESSURE, 42.5)
        assert frame[gw.xv]["full_data"] == {"data": 42.5}

    gateway(scenario)


def test_an_unknown_fault_and_a_bad_filter(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for method in ("GET", "DELETE"):
            body = await gw.error(method, f"{FAULTS}/NOPE", 404)
            assert body["error_code"] == "resource-not-found"
            assert body["message"] == "Fault 'NOPE' not found on app 'actuator'"
            assert body["parameters"] == {"entity_id": "actuator", "fault_code": "NOPE"}
        body = await gw.error("GET", f"{FAULTS}?status=bogus", 400)
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == "Invalid status parameter value"
        assert body["parameters"]["value"] == "bogus"
        assert body["parameters"]["allowed_values"] == "pending, confirmed, cleared, healed, all"

    gateway(scenario)


def test_clear_one_fault(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await report(gw, Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "too hot", ACTUATOR),
                     Report("PAD_WEAR", "FAILED", CRITICAL, "pads worn", ACTUATOR))
        status, _ = await gw.json("DELETE", f"{FAULTS}/BRAKE_OVERHEAT")
        assert status == 204
        await gw.client.app[FAULT_SERVICE].settled()
        status, body = await gw.json("GET", FAULTS)
        assert [i["fault_code"] for i in body["items"]] == ["PAD_WEAR"]
        status, body = await gw.json("GET", f"{FAULTS}?status=cleared")
        assert [i["fault_code"] for i in body["items"]] == ["BRAKE_OVERHEAT"]
        assert body["items"][0]["status"] == "CLEARED"

    gateway(scenario)


def test_clear_all_faults_of_an_entity_only(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await report(gw, Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "too hot", ACTUATOR),
                     Report("SENSOR_STALE", "FAILED", CRITICAL, "no data", MONITOR))
        status, _ = await gw.json("DELETE", FAULTS)
        assert status == 204
        await gw.client.app[FAULT_SERVICE].settled()
        status, body = await gw.json("GET", "/api/v1/faults")
        assert [i["fault_code"] for i in body["items"]] == ["SENSOR_STALE"]

    gateway(scenario)


def test_a_pending_fault_needs_confirmation(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await report(gw, Report("SLOW_RELEASE", "FAILED", ERROR, "slow", ACTUATOR))
        status, body = await gw.json("GET", f"{FAULTS}?status=pending")
        assert [(i["fault_code"], i["status"]) for i in body["items"]] == [
            ("SLOW_RELEASE", "PREFAILED")]
        status, body = await gw.json("GET", f"{FAULTS}?status=confirmed")
        assert body["items"] == []

    gateway(scenario, settings=("faults.confirmation_threshold=-3",))


def test_logs_of_an_app(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        rosout = gw.state.rosout
        assert rosout is not None
        rosout.add("chassis.brakes.actuator", 30, "pressure low", STAMP)
        rosout.add("chassis.brakes.actuator", 10, "tick", STAMP + 1)
        rosout.add("chassis.brakes.monitor", 40, "monitor down", STAMP + 2)
        status, body = await gw.json("GET", "/api/v1/apps/actuator/logs")
        assert status == 200
        messages = [i["message"] for i in body["items"]]
        assert sorted(messages) == ["pressure low", "tick"]
        severities = {i["message"]: i["severity"] for i in body["items"]}
        assert severities["pressure low"] == "warning"
        status, body = await gw.json("GET", "/api/v1/functions/chassis/logs")
        assert sorted(i["message"] for i in body["items"]) == ["monitor down", "pressure low",
                                                              "tick"]
        status, body = await gw.json("GET", "/api/v1/apps/scanner/logs")
        assert body["items"] == []

    gateway(scenario)


def test_log_configuration(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        url = "/api/v1/apps/actuator/logs/configuration"
        status, body = await gw.json("GET", url)
        assert (status, body) == (200, {"severity_filter": "debug", "max_entries": 100})
        status, _ = await gw.json("PUT", url, json={"severity_filter": "warning"})
        assert status == 204
        status, body = await gw.json("GET", url)
        assert body["severity_filter"] == "warning"
        rosout = gw.state.rosout
        assert rosout is not None
        rosout.add("chassis.brakes.actuator", 30, "pressure low", STAMP)
        rosout.add("chassis.brakes.actuator", 10, "tick", STAMP + 1)
        status, body = await gw.json("GET", "/api/v1/apps/actuator/logs")
        assert [i["message"] for i in body["items"]] == ["pressure low"]
        body = await gw.error("PUT", url, 400, json={"severity_filter": "loud"})
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == ("'severity_filter' must be one of debug, info, warning, "
                                   "error, fatal; got 'loud'")
        assert body["parameters"]["field"] == "severity_filter"

    gateway(scenario)


class Stream:
    """An open fault stream: its SSE events (id, event, data) and comments, as read."""

    def __init__(self, resp: Any) -> None:
        self.resp = resp
        self.comments: list[str] = []

    async def next_comment(self) -> None:
        """Read on until the next comment line."""
        count = len(self.comments)
        while len(self.comments) == count:
            await self._line({})

    async def _line(self, event: dict[str, Any]) -> bool:
        """Read one line into `event` or the comments; True at the end of an event."""
        line = (await asyncio.wait_for(self.resp.content.readline(), 10)).decode().rstrip("\n")
        if not line:
            return "data" in event
        if line.startswith(":"):
            self.comments.append(line[1:].strip())
            return False
        key, _, value = line.partition(":")
        value = value.strip()
        event[key] = int(value) if key == "id" else json.loads(value) if key == "data" \
            else value
        return False

    async def next(self) -> dict[str, Any]:
        """The next event."""
        event: dict[str, Any] = {}
        while not await self._line(event):
            pass
        return event


def test_the_fault_stream_delivers_numbered_events(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.get("/api/v1/faults/stream") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            assert resp.headers["Cache-Control"] == "no-cache"
            stream = Stream(resp)
            await report(gw, Report("BRAKE_OVERHEAT", "FAILED", ERROR, "first", ACTUATOR))
            ev = await stream.next()
            assert ev["event"] == "fault_confirmed" and isinstance(ev["id"], int)
            data = ev["data"]
            assert data["event_type"] == "fault_confirmed"
            assert (data["fault"]["fault_code"], data["fault"]["message"]) == (
                "BRAKE_OVERHEAT", "first")
            assert data["fault"]["source"] == ACTUATOR
            kind = "app" if gw.profile == "spec" else "apps"
            assert data[gw.xv] == {"entity_type": kind, "entity_id": "actuator"}
            if gw.profile == "spec":  # the reference sends seconds since the epoch
                assert data["timestamp"].endswith("Z")
            else:
                assert isinstance(data["timestamp"], float)
            await report(gw, Report("BRAKE_OVERHEAT", "FAILED", CRITICAL, "worse", ACTUATOR))
            upd = await stream.next()
            assert upd["event"] == "fault_updated" and upd["id"] > ev["id"]
            status, _ = await gw.json("DELETE", f"{FAULTS}/BRAKE_OVERHEAT")
            assert status == 204
            cleared = await stream.next()
            assert cleared["event"] == "fault_cleared" and cleared["id"] == upd["id"] + 1
            assert "auto_cleared_codes" not in cleared["data"]
            while "keepalive" not in stream.comments:  # an idle stream keeps alive
                await stream.next_comment()

    gateway(scenario, settings=("sse.keepalive_sec=0.1",))


def _fault(code: str, message: str = "seen") -> Report:
    return Report(code, "FAILED", ERROR, message, ACTUATOR)


def test_a_reconnect_with_last_event_id_replays(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.get("/api/v1/faults/stream") as resp:
            await report(gw, _fault("BRAVO_0", "seen live"))
            seen = await Stream(resp).next()
        await report(gw, _fault("BRAVO_1", "missed"), _fault("BRAVO_2", "missed too"))
        async with gw.client.get("/api/v1/faults/stream",
                                 headers={"Last-Event-ID": str(seen["id"])}) as resp:
            stream = Stream(resp)
            replayed = [await stream.next(), await stream.next()]
            assert [e["data"]["fault"]["fault_code"] for e in replayed] == ["BRAVO_1",
                                                                            "BRAVO_2"]
            assert [e["id"] for e in replayed] == [seen["id"] + 1, seen["id"] + 2]
            await report(gw, _fault("BRAVO_3", "live again"))
            assert (await stream.next())["data"]["fault"]["fault_code"] == "BRAVO_3"

    gateway(scenario)


async def sse_clients(gw: Gw) -> int:
    status, health = await gw.json("GET", "/api/v1/health")
    return int(health[f"{gw.xv}-sse"]["connected_clients"])


def test_the_stream_client_cap_and_slot_release(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        url = "/api/v1/faults/stream"
        async with gw.client.get(url) as one:
            two = await gw.client.get(url)
            assert one.status == two.status == 200
            body = await gw.error("GET", url, 503)
            assert body["error_code"] == "service-unavailable"
            status, health = await gw.json("GET", "/api/v1/health")
            assert health[f"{gw.xv}-sse"] == {"connected_clients": 2, "max_clients": 2}
            two.close()  # a disconnect frees the slot at once, not after a grace period
            for _ in range(250):
                if await sse_clients(gw) == 1:
                    break
                await asyncio.sleep(0.02)
            assert await sse_clients(gw) == 1
            async with gw.client.get(url) as four:
                assert four.status == 200

    gateway(scenario, settings=("sse.max_clients=2",))


# --- wire profiles (medkit-wire.md rows) -------------------------------------------------------


def test_fault_list_wire_fields(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await report(gw, Report("RANGE_INVALID", "FAILED", ERROR, "range invalid", ACTUATOR),
                     Report("FREQ_UNSUPPORTED", "FAILED", WARN, "bad rate", ACTUATOR))
        status, body = await gw.json("GET", FAULTS)
        items = {i["fault_code"]: i for i in body["items"]}
        # severity: the spec's label, the reference's number (a CONFLICT row)
        assert items["RANGE_INVALID"]["severity"] == {"spec": "ERROR", "medkit": 2}[gw.profile]
        assert items["RANGE_INVALID"]["severity_label"] == "ERROR"
        item = items["FREQ_UNSUPPORTED"]
        # the spec's fields stay, the reference's beside them
        assert item["message"] == "bad rate" and item["timestamp"].endswith("Z")
        assert item["source"] == ACTUATOR
        assert item["description"] == item["message"] and item["severity_label"] == "WARN"
        assert isinstance(item["first_occurred"], float)
        assert isinstance(item["last_occurred"], float)
        assert abs(item["last_occurred"] - time.time()) < 3600
        assert item["first_occurred"] <= item["last_occurred"]
        assert item["reporting_sources"] == [ACTUATOR]
        assert item["status"] == "CONFIRMED" and item["occurrence_count"] >= 1
        for path in (FAULTS, "/api/v1/faults", "/api/v1/functions/chassis/faults"):
            status, body = await gw.json("GET", path)
            xv = body[gw.xv]
            assert xv["count"] == xv["total_count"] == len(body["items"]) == 2, path
            assert {i["status"] for i in body["items"]} <= {"PREFAILED", "CONFIRMED"}
        status, body = await gw.json("GET", FAULTS)
        assert body[gw.xv]["entity_id"] == "actuator" and body[gw.xv]["source_id"] == ACTUATOR
        status, body = await gw.json("GET", "/api/v1/functions/chassis/faults")
        assert body[gw.xv]["aggregation_level"] == "function"
        assert body[gw.xv]["aggregated"] is True
        status, body = await gw.json("GET", "/api/v1/faults")
        assert body[gw.xv]["muted_count"] == body["muted_count"] == 0

    gateway(scenario)


def test_fault_detail_wire_fields(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await report(gw, Report("RANGE_INVALID", "FAILED", ERROR, "range invalid", ACTUATOR))
        status, body = await gw.json("GET", f"{FAULTS}/RANGE_INVALID")
        assert status == 200
        assert body["item"]["severity"] == 2 and body["item"]["code"] == "RANGE_INVALID"
        xv = body[gw.xv]
        assert xv["status_raw"] == "CONFIRMED" and xv["severity_label"] == "ERROR"
        assert xv["reporting_sources"] == [ACTUATOR] and xv["occurrence_count"] >= 1
        records = body["environment_data"]["extended_data_records"]
        assert records["first_occurrence"].endswith("Z")

    gateway(scenario)


def test_fault_stream_cleared_frame(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await report(gw, Report("CALIBRATION_REQUIRED", "FAILED", INFO, "calibrate", ACTUATOR))
        async with gw.client.get("/api/v1/faults/stream") as resp:
            assert resp.status == 200
            stream = Stream(resp)
            status, _ = await gw.json("DELETE", f"{FAULTS}/CALIBRATION_REQUIRED")
            assert status == 204
            event = await stream.next()
        assert event["event"] == "fault_cleared" and isinstance(event["id"], int)
        data = event["data"]
        assert data["event_type"] == "fault_cleared"
        fault = data["fault"]
        assert fault["severity"] == {"spec": "INFO", "medkit": 0}[gw.profile]
        assert isinstance(fault["first_occurred"], float)
        assert fault["reporting_sources"] == [ACTUATOR]
        assert data[gw.xv]["entity_id"] == "actuator"
        assert data[gw.xv]["entity_type"] == {"spec": "app", "medkit": "apps"}[gw.profile]
        if gw.profile == "medkit":
            assert isinstance(data["timestamp"], float)
        else:
            assert data["timestamp"].endswith("Z")

    gateway(scenario)
