"""Locks in process (the locks handlers): acquire, list, extend,
release, the guard on writes of a locked entity, and the errors of both profiles."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.faults.keys import FAULT_SERVICE
from gateway.faults.model import CRITICAL, Report
from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import (
    ACTIVE,
    ACTUATOR,
    COMMAND,
    HOST,
    MONITOR,
    FakeNode,
    default_nodes,
)

APP = "/api/v1/apps/actuator"
ME, OTHER = {"X-Client-Id": "me"}, {"X-Client-Id": "other"}


async def acquire(gw: Gw, seconds: int = 60) -> dict[str, object]:
    status, body = await gw.json("POST", f"{APP}/locks", json={"lock_expiration": seconds},
                                 headers=ME)
    assert status == 201, body
    return body


def _param(gw: Gw, name: str) -> object:
    node = next(n for n in gw.nodes if n.fqn == ACTUATOR)
    assert node.params is not None
    return node.params[name].value


def test_acquire_list_extend_release(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        lock = await acquire(gw)
        lock_id = str(lock["id"])
        assert lock_id.startswith("lock_") and lock["owned"] is True
        assert str(lock["lock_expiration"]).endswith("Z")
        status, body = await gw.json("GET", f"{APP}/locks", headers=ME)
        assert status == 200 and [i["id"] for i in body["items"]] == [lock_id]
        assert body["items"][0]["owned"] is True
        assert body[gw.xv] == {"total_count": 1, "entity_id": "actuator"}
        status, body = await gw.json("GET", f"{APP}/locks/{lock_id}", headers=OTHER)
        assert (status, body["owned"]) == (200, False)  # owned is per client
        status, _ = await gw.json("PUT", f"{APP}/locks/{lock_id}",
                                  json={"lock_expiration": 120}, headers=ME)
        assert status == 204
        status, _ = await gw.json("DELETE", f"{APP}/locks/{lock_id}", headers=ME)
        assert status == 204
        status, body = await gw.json("GET", f"{APP}/locks")
        assert body["items"] == []
        status, health = await gw.json("GET", "/api/v1/health")
        assert health[f"{gw.xv}-locks"] == {"held": 0}

    gateway(scenario)


def test_a_second_client_is_refused(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        lock = await acquire(gw)
        body = await gw.error("POST", f"{APP}/locks", 409, json={"lock_expiration": 60},
                              headers=OTHER)
        assert body["error_code"] == "invalid-request"
        assert body["parameters"]["existing_lock_id"] == lock["id"]
        assert body["message"].startswith("Entity 'actuator' is already locked")
        for method, extra in (("PUT", {"json": {"lock_expiration": 5}}), ("DELETE", {})):
            body = await gw.error(method, f"{APP}/locks/{lock['id']}", 403, headers=OTHER,
                                  **extra)
            assert body["error_code"] == "forbidden"
            assert body["message"] == f"Lock '{lock['id']}' is held by another client"
            assert body["parameters"] == {"entity_id": "actuator", "lock_id": lock["id"]}

    gateway(scenario)


def test_a_locked_entity_refuses_other_writers(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        lock = await acquire(gw)
        body = await gw.error("PUT", f"{APP}/configurations/mode", 409,
                              json={"data": "manual"}, headers=OTHER)
        assert body["error_code"] == "lock-broken"
        assert body["message"] == "Entity 'actuator' is locked by another client"
        assert body["parameters"]["lock_id"] == lock["id"]
        assert body["parameters"]["collection"] == "configurations"
        assert _param(gw, "mode") == "auto"  # the write never reached the node
        status, body = await gw.json("PUT", f"{APP}/configurations/mode",
                                     json={"data": "manual"}, headers=ME)
        assert status == 200 and _param(gw, "mode") == "manual"  # the holder writes
        # the lock covers the entity's operations too
        body = await gw.error("POST", f"{APP}/operations/calibrate/executions", 409, json={},
                              headers=OTHER)
        assert body["error_code"] == "lock-broken"
        # reads stay open
        status, _ = await gw.json("GET", f"{APP}/configurations/mode", headers=OTHER)
        assert status == 200

    gateway(scenario)


def test_lock_request_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", f"{APP}/locks", 400, json={"lock_expiration": 60})
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == ("The X-Client-Id header is required on lock changes "
                                   "(any unique string your client chooses)")
        body = await gw.error("POST", f"{APP}/locks", 400, json={}, headers=ME)
        assert body["message"] == "lock_expiration (seconds) is required"
        body = await gw.error("GET", f"{APP}/locks/nope", 404)
        assert body["message"] == "Lock 'nope' not found on 'actuator'"
        assert body["parameters"] == {"entity_id": "actuator", "lock_id": "nope"}
        url = "/api/v1/functions/chassis/locks"  # components and apps only
        if gw.profile == "medkit":
            body = await gw.error("POST", url, 400, json={"lock_expiration": 60}, headers=ME)
            assert body["error_code"] == "collection-not-supported"
            assert body["message"] == "Function entities do not support locks collection"
        else:
            body = await gw.error("POST", url, 404, json={"lock_expiration": 60}, headers=ME)
            assert body["message"] == f"No resource at {url}"

    gateway(scenario)


def test_locking_disabled_answers_501(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", f"{APP}/locks", 501, json={"lock_expiration": 60},
                              headers=ME)
        assert body["error_code"] == "not-implemented"
        status, body = await gw.json("GET", "/api/v1/")
        assert body["capabilities"]["locking"] is False
        status, _ = await gw.json("PUT", f"{APP}/configurations/mode", json={"data": "x"},
                                  headers=OTHER)
        assert status == 200  # nothing guards writes

    gateway(scenario, settings=("locking.enabled=false",))


A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}
MONITOR_APP = "/api/v1/apps/monitor"
COMPONENT = f"/api/v1/components/{HOST}"
THRESHOLD = f"{MONITOR_APP}/configurations/threshold"
# components: not breakable, and their log settings need the caller's own lock
COMPONENT_RULES = ("locking.defaults.components.breakable=false",
                   "locking.defaults.components.lock_required_scopes=[logs]")


async def lock(gw: Gw, path: str, headers: dict[str, str], **body: object
               ) -> tuple[int, dict[str, Any]]:
    body.setdefault("lock_expiration", 60)
    return await gw.json("POST", f"{path}/locks", json=body, headers=headers)


async def writes(gw: Gw, headers: dict[str, str]) -> dict[str, tuple[int, Any]]:
    """One write per guarded collection of the apps used here."""
    return {
        "data": await gw.json("PUT", f"{APP}/data{COMMAND}", json={"data": 1.5},
                              headers=headers),
        "configurations": await gw.json("PUT", THRESHOLD, json={"data": 7}, headers=headers),
        "faults": await gw.json("DELETE", f"{MONITOR_APP}/faults", headers=headers),
        "logs": await gw.json("PUT", f"{MONITOR_APP}/logs/configuration",
                              json={"severity_filter": "info"}, headers=headers),
        "operations": await gw.json("POST", f"{APP}/operations/calibrate/executions", json={},
                                    headers=headers),
    }


def test_lock_body_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await lock(gw, APP, A, scopes=["nope"])
        assert (status, body["error_code"]) == (400, "invalid-parameter")
        assert "nope" in body["message"]
        status, body = await lock(gw, APP, A, lock_expiration=0)
        assert (status, body["error_code"]) == (400, "invalid-parameter")
        status, body = await lock(gw, "/api/v1/apps/ghost", A)
        assert status == 404 and body["parameters"]["entity_id"] == "ghost"
        status, body = await lock(gw, "/api/v1/areas/chassis", A)
        assert status in (400, 404, 405) and body["error_code"], body
        status, body = await gw.json("GET", f"{APP}/locks")
        assert body["items"] == []  # nothing was locked

    gateway(scenario)


def test_guarded_writes_refused_while_locked_and_accepted_after(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        locks = {}
        for path in (APP, MONITOR_APP):
            status, body = await lock(gw, path, A)
            assert status == 201, body
            locks[path] = body["id"]
        for collection, (status, body) in (await writes(gw, B)).items():
            assert (status, body["error_code"]) == (409, "lock-broken"), (collection, body)
            assert body["parameters"]["collection"] == collection, body
            assert body["parameters"]["lock_id"] in locks.values()
            assert body["parameters"]["lock_expiration"].endswith("Z")
        for collection, (status, body) in (await writes(gw, {})).items():  # another client
            assert status == 409, (collection, body)
        monitor = next(n for n in gw.nodes if n.fqn == MONITOR)
        assert monitor.params is not None and monitor.params["threshold"].value == 5
        assert gw.pool.published == []  # no write reached the robot
        for collection, (status, body) in (await writes(gw, A)).items():  # the holder writes
            assert status < 300, (collection, body)
        for path, lock_id in locks.items():
            status, _ = await gw.json("DELETE", f"{path}/locks/{lock_id}", headers=A)
            assert status == 204
        for collection, (status, body) in (await writes(gw, B)).items():
            assert status < 300, (collection, body)

    gateway(scenario)


def test_break_lock_and_scope_filtering(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, first = await lock(gw, APP, A, scopes=["data"])
        assert status == 201 and first["scopes"] == ["data"]
        status, _ = await gw.json("PUT", f"{APP}/configurations/mode", json={"data": "x"},
                                  headers=B)
        assert status == 200  # configurations are not in the lock's scopes
        status, second = await lock(gw, APP, B, break_lock=True, scopes=["data", "operations"])
        assert status == 201, second
        assert second["id"] != first["id"] and second["owned"] is True
        await gw.error("GET", f"{APP}/locks/{first['id']}", 404)
        body = await gw.error("PUT", f"{APP}/data{COMMAND}", 409, json={"data": 2.0},
                              headers=A)
        assert body["error_code"] == "lock-broken"
        assert body["parameters"]["lock_id"] == second["id"]

    gateway(scenario)


def test_a_component_lock_covers_its_hosted_apps(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, held = await lock(gw, COMPONENT, A, scopes=["configurations"])
        assert status == 201, held
        body = await gw.error("PUT", THRESHOLD, 409, json={"data": 8}, headers=B)
        assert body["error_code"] == "lock-broken"
        assert body["parameters"]["entity_id"] == HOST
        assert body["parameters"]["lock_id"] == held["id"]
        status, _ = await gw.json("PUT", THRESHOLD, json={"data": 8}, headers=A)
        assert status == 200
        status, _ = await gw.json("PUT", f"{APP}/data{COMMAND}", json={"data": 1.0},
                                  headers=B)
        assert status == 200  # data is not in the lock's scopes
        body = await gw.error("POST", f"{COMPONENT}/locks", 409,
                              json={"lock_expiration": 60, "break_lock": True}, headers=B)
        assert body["error_code"] == "invalid-request"
        assert "not breakable" in body["message"]

    gateway(scenario, settings=COMPONENT_RULES)


def test_a_required_scope_needs_the_callers_own_lock(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        path = f"{COMPONENT}/logs/configuration"
        body = await gw.error("PUT", path, 409, json={"max_entries": 50}, headers=A)
        assert body["error_code"] == "invalid-request"
        assert body["parameters"]["collection"] == "logs"
        assert body["parameters"]["details"].startswith("A lock must be held")
        status, held = await lock(gw, COMPONENT, A, scopes=["logs"])
        assert status == 201, held
        status, _ = await gw.json("PUT", path, json={"max_entries": 50}, headers=A)
        assert status == 204
        await gw.error("PUT", path, 409, json={"max_entries": 50}, headers=B)

    gateway(scenario, settings=COMPONENT_RULES)


def test_expiry_frees_the_entity(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, held = await lock(gw, APP, A, lock_expiration=1)
        assert status == 201, held
        await gw.error("PUT", f"{APP}/data{COMMAND}", 409, json={"data": 3.0}, headers=B)
        for _ in range(500):
            status, body = await gw.json("GET", f"{APP}/locks")
            if body["items"] == []:
                break
            await asyncio.sleep(0.02)
        assert body["items"] == []
        status, _ = await gw.json("PUT", f"{APP}/data{COMMAND}", json={"data": 3.0},
                                  headers=B)
        assert status == 200
        await gw.error("DELETE", f"{APP}/locks/{held['id']}", 404, headers=A)

    gateway(scenario, settings=("locking.cleanup_interval=0.2",))


def test_a_global_fault_clear_skips_locked_entities(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        faults = gw.client.app[FAULT_SERVICE]
        faults.submit([Report("LOCKED_FAULT", "FAILED", CRITICAL, "on a locked app", ACTUATOR),
                       Report("FREE_FAULT", "FAILED", CRITICAL, "on a free app", MONITOR)])
        codes: set[str] = set()
        for _ in range(300):
            await faults.settled()
            status, body = await gw.json("GET", "/api/v1/faults")
            codes = {i["fault_code"] for i in body["items"]}
            if len(codes) == 2:
                break
            await asyncio.sleep(0.01)
        assert codes == {"LOCKED_FAULT", "FREE_FAULT"}
        status, held = await lock(gw, APP, A, scopes=["faults"])
        assert status == 201, held
        status, _ = await gw.json("DELETE", "/api/v1/faults", headers=B)
        assert status == 204  # never 409
        await faults.settled()
        status, body = await gw.json("GET", "/api/v1/faults")
        assert [i["fault_code"] for i in body["items"]] == ["LOCKED_FAULT"]
        status, _ = await gw.json("DELETE", "/api/v1/faults", headers=A)  # the holder clears
        assert status == 204
        await faults.settled()
        status, body = await gw.json("GET", "/api/v1/faults")
        assert body["items"] == []

    gateway(scenario)


def test_lifecycle_control_is_lock_guarded(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        managed = "/api/v1/apps/controller"
        status, held = await lock(gw, managed, A, scopes=["modes"])
        assert status == 201, held
        body = await gw.error("PUT", f"{managed}/status/restart", 409, headers=B)
        assert body["error_code"] == "lock-broken"
        assert body["parameters"]["collection"] == "modes"
        body = await gw.error("PUT", f"{COMPONENT}/status/restart", 409, headers=B)
        assert body["error_code"] == "lock-broken"
        assert body["parameters"]["collection"] == "modes"
        assert [m["app_id"] for m in body["parameters"]["locked_members"]] == ["controller"]
        assert next(n for n in gw.nodes if n.name == "controller").lifecycle == ACTIVE

    gateway(scenario, nodes=[*default_nodes(),
                             FakeNode("controller", "/chassis/brakes", lifecycle=ACTIVE)])


def test_openapi_declares_the_lock_routes(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, doc = await gw.json("GET", "/api/v1/docs")
        post = doc["paths"]["/apps/{app_id}/locks"]["post"]
        assert set(post["responses"]) >= {"201", "400", "404"}
        assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
            "/LockRequest")
        assert post["responses"]["201"]["content"]["application/json"]["schema"][
            "$ref"].endswith("/Lock")
        assert "204" in doc["paths"]["/apps/{app_id}/locks/{lock_id}"]["delete"]["responses"]
        assert "202" in doc["paths"]["/components/{component_id}/status/shutdown"]["put"][
            "responses"]
        upload = doc["paths"]["/apps/{app_id}/scripts"]["post"]
        assert "multipart/form-data" in upload["requestBody"]["content"]
        assert {"Lock", "LockRequest", "Script", "ScriptExecution",
                "LifecycleTransition"} <= set(doc["components"]["schemas"])
        status, app = await gw.json("GET", APP)
        caps = {c["name"] for c in app["capabilities"]}
        assert "locks" in caps and "scripts" not in caps  # no scripts backend here

    gateway(scenario)


def test_lock_body_and_a_scoped_conflict(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, held = await lock(gw, APP, A, scopes=["configurations", "faults"])
        assert status == 201, held
        assert set(held) == {"id", "owned", "scopes", "lock_expiration"} and held["owned"]
        status, listed = await gw.json("GET", f"{APP}/locks", headers=B)
        assert [i["id"] for i in listed["items"]] == [held["id"]]
        assert listed["items"][0]["owned"] is False
        assert listed[gw.xv]["total_count"] == 1
        body = await gw.error("DELETE", f"{APP}/faults/SOME_FAULT", 409, headers=B)
        assert body["error_code"] == "lock-broken"
        assert body["parameters"]["collection"] == "faults"
        assert body["parameters"]["entity_id"] == "actuator"
        status, body = await gw.json("PUT", f"{APP}/data{COMMAND}", json={"data": 3.0},
                                     headers=B)
        assert status == 200, body  # data: not in the lock's scopes

    gateway(scenario)
