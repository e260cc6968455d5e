"""Locks through the parents of a locked app, in process, on the fake demo robot behind the
shipped manifest: member-qualified and bare item ids on its component, function and area,
collection resets, fault clears, publishes and operations; a component's required scopes
hold through its area; expiry ends the holder's subscriptions at the expiry instant."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import quote

from gateway.faults.model import CRITICAL, Report
from tests.inproc.inproc_demo import TEMPERATURE_TOPIC, run_demo
from tests.inproc.inproc_gateway import Gw, Runner, Scenario

API = "/api/v1"
A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}
BOARD = f"{API}/components/engine-sensor-board"  # hosts temp_sensor (and rpm_sensor)
ECU = f"{API}/components/engine-ecu"  # hosts calibration; its manifest requires a configurations lock
AREA, FUNCTION = f"{API}/areas/engine", f"{API}/functions/engine-monitoring"
FAULT_NODE = "rpm_sensor"  # on the engine sensor board, in the engine area and function
SETTINGS = ("locking.cleanup_interval=60", "locking.default_max_expiration=600")


def demo(gateway: Runner, scenario: Scenario) -> None:
    run_demo(gateway, scenario, SETTINGS)


def enc(topic: str) -> str:
    return quote(topic, safe="")


async def acquire(gw: Gw, path: str, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    body.setdefault("lock_expiration", 120)
    status, lock = await gw.json("POST", f"{path}/locks", json=body, headers=headers)
    assert status == 201, lock
    return dict(lock)


async def release(gw: Gw, path: str, lock: dict[str, Any], headers: dict[str, str]) -> None:
    status, body = await gw.json("DELETE", f"{path}/locks/{lock['id']}", headers=headers)
    assert status == 204, body


async def refused_by(gw: Gw, method: str, path: str, member: str, collection: str,
                     **kw: Any) -> dict[str, Any]:
    """A 409 that names the locked member."""
    body = await gw.error(method, path, 409, **kw)
    members = [m["app_id"] for m in body["parameters"]["locked_members"]]
    assert member in members and member in body["message"], body
    assert body["parameters"]["collection"] == collection, body
    return body


async def publish_rate(gw: Gw) -> float:
    status, body = await gw.json("GET", f"{API}/apps/temp_sensor/configurations/publish_rate")
    assert status == 200, body
    return float(body["data"])


def test_parameters_of_a_locked_app_through_its_component_function_and_area(
        gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, _ = await gw.json("PUT", f"{API}/apps/temp_sensor/configurations/publish_rate",
                                  json={"data": 3.0})
        assert status == 200
        lock = await acquire(gw, f"{API}/apps/temp_sensor", A, scopes=["configurations"])
        for parent in (BOARD, FUNCTION, AREA):
            for item in ("temp_sensor:publish_rate", "publish_rate"):
                path = f"{parent}/configurations/{item}"
                body = await refused_by(gw, "PUT", path, "temp_sensor", "configurations",
                                        json={"data": 7.0}, headers=B)
                assert "nothing was changed" in body["message"]
                await refused_by(gw, "DELETE", path, "temp_sensor", "configurations",
                                 headers=B)
                await refused_by(gw, "PUT", path, "temp_sensor", "configurations",
                                 json={"data": 7.0})  # no client id: another client
        for parent in (BOARD, FUNCTION):  # a collection reset: refused whole, nothing reset
            await refused_by(gw, "DELETE", f"{parent}/configurations", "temp_sensor",
                             "configurations", headers=B)
        assert await publish_rate(gw) == 3.0
        # the holder writes through the parent
        status, body = await gw.json("PUT",
                                     f"{BOARD}/configurations/temp_sensor:publish_rate",
                                     json={"data": 4.0}, headers=A)
        assert status == 200, body
        assert await publish_rate(gw) == 4.0
        await release(gw, f"{API}/apps/temp_sensor", lock, A)
        status, body = await gw.json("PUT", f"{FUNCTION}/configurations/publish_rate",
                                     json={"data": 5.0}, headers=B)
        assert status == 200 and await publish_rate(gw) == 5.0, body
        status, body = await gw.json("DELETE", f"{BOARD}/configurations", headers=B)
        assert status != 409 and await publish_rate(gw) == 2.0, body  # the value first seen

    demo(gateway, scenario)


def test_a_components_required_scope_holds_through_its_area(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        path = f"{AREA}/configurations/calibration:calibration_offset"
        body = await gw.error("PUT", path, 409, json={"data": 0.5}, headers=B)
        assert body["error_code"] == "invalid-request"
        assert body["parameters"]["entity_id"] == "engine-ecu", body
        assert body["parameters"]["collection"] == "configurations"
        assert "engine-ecu" in body["message"]
        body = await gw.error("DELETE", path, 409, headers=B)
        assert body["error_code"] == "invalid-request"
        body = await gw.error("PUT", f"{ECU}/configurations/calibration:calibration_offset",
                              409, json={"data": 0.5}, headers=B)  # as before
        assert body["error_code"] == "invalid-request"
        lock = await acquire(gw, ECU, B, scopes=["configurations"])
        status, body = await gw.json("PUT", path, json={"data": 0.5}, headers=B)
        assert status == 200, body
        await refused_by(gw, "PUT", path, "calibration", "configurations",
                         json={"data": 0.25}, headers=A)  # the lock is B's
        await release(gw, ECU, lock, B)

    demo(gateway, scenario)


def test_publishes_and_operations_of_a_locked_app_through_its_parents(
        gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{BOARD}/data")
        data_ids = [i["id"] for i in body["items"]
                    if i[gw.xv].get("ros2", {}).get("topic", i["id"]) == TEMPERATURE_TOPIC]
        assert data_ids, body
        message = {"temperature": 20.0, "variance": 0.0}
        locks = [await acquire(gw, f"{API}/apps/temp_sensor", A, scopes=["data"]),
                 await acquire(gw, f"{API}/apps/calibration", A, scopes=["operations"])]
        for parent in (BOARD, FUNCTION, AREA):
            for item in {data_ids[0], enc(TEMPERATURE_TOPIC),
                         "temp_sensor:" + enc(TEMPERATURE_TOPIC)}:
                await refused_by(gw, "PUT", f"{parent}/data/{item}", "temp_sensor", "data",
                                 json=message, headers=B)
        for parent in (ECU, AREA):
            await refused_by(gw, "POST", f"{parent}/operations/calibrate/executions",
                             "calibration", "operations", json={}, headers=B)
        assert gw.pool.published == [] and gw.caller.calls == []  # nothing went out
        status, body = await gw.json("POST", f"{ECU}/operations/calibrate/executions",
                                     json={}, headers=A)
        assert status == 200, body
        status, body = await gw.json("PUT", f"{BOARD}/data/{enc(TEMPERATURE_TOPIC)}",
                                     json=message, headers=A)
        assert status == 200, body
        assert [p[0] for p in gw.pool.published] == [TEMPERATURE_TOPIC]
        await release(gw, f"{API}/apps/temp_sensor", locks[0], A)
        await release(gw, f"{API}/apps/calibration", locks[1], A)
        status, body = await gw.json("POST", f"{AREA}/operations/calibrate/executions",
                                     json={}, headers=B)
        assert status == 200, body

    demo(gateway, scenario)


async def open_faults(gw: Gw) -> set[str]:
    status, body = await gw.json("GET", f"{API}/apps/{FAULT_NODE}/faults")
    return {f["fault_code"] for f in body["items"]}


def test_fault_clears_of_a_locked_app_through_its_parents(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        codes = {f"PARENT_ROUTE_{n}" for n in range(5)}
        await gw.report_faults(*(Report(code, "FAILED", CRITICAL, "reported for the lock test",
                                        f"/powertrain/engine/{FAULT_NODE}")
                                 for code in sorted(codes)))
        assert codes <= await open_faults(gw)
        lock = await acquire(gw, f"{API}/apps/{FAULT_NODE}", A, scopes=["faults"])
        for parent in (BOARD, FUNCTION, AREA):
            await refused_by(gw, "DELETE", f"{parent}/faults", FAULT_NODE, "faults",
                             headers=B)
            await refused_by(gw, "DELETE", f"{parent}/faults/PARENT_ROUTE_0", FAULT_NODE,
                             "faults", headers=B)
        assert codes <= await open_faults(gw)  # 5 faults, none cleared
        status, _ = await gw.json("DELETE", f"{AREA}/faults/PARENT_ROUTE_0", headers=A)
        assert status == 204
        assert "PARENT_ROUTE_0" not in await open_faults(gw)
        await release(gw, f"{API}/apps/{FAULT_NODE}", lock, A)
        status, _ = await gw.json("DELETE", f"{FUNCTION}/faults", headers=B)
        assert status == 204
        assert not codes & await open_faults(gw)

    demo(gateway, scenario)


def test_expiry_ends_the_cyclic_subscriptions_at_the_expiry_instant(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        app = f"{API}/apps/temp_sensor"
        lock = await acquire(gw, app, A, lock_expiration=1)
        status, sub = await gw.json("POST", f"{app}/cyclic-subscriptions", json={
            "resource": f"{app}/data{TEMPERATURE_TOPIC}", "interval": "slow",
            "duration": 300}, headers=A)
        assert status == 201, sub
        path = f"{app}/cyclic-subscriptions/{sub['id']}"
        assert (await gw.json("GET", path))[0] == 200
        # the cleanup sweep runs every 60 s here: only the lock's own timer ends it in time
        deadline = time.monotonic() + 15
        while (await gw.json("GET", path))[0] != 404:
            assert time.monotonic() < deadline, "the subscription outlived its lock"
            await asyncio.sleep(0.05)
        status, body = await gw.json("GET", f"{app}/locks")
        assert body["items"] == []
        await gw.error("DELETE", f"{app}/locks/{lock['id']}", 404, headers=A)

    demo(gateway, scenario)


def test_lock_ids_differ_across_restarts(gateway: Runner) -> None:
    ids: list[str] = []

    async def scenario(gw: Gw) -> None:
        ids.append(str((await acquire(gw, f"{API}/apps/temp_sensor", A))["id"]))

    for _ in range(2):
        demo(gateway, scenario)
    assert ids[0] != ids[1], ids
