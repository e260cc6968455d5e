"""Locks in process (the locks handlers): acquire, list, extend,
release, the guard on writes of a locked entity, and the errors of both profiles."""

from __future__ import annotations

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import ACTUATOR

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
