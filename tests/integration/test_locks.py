"""Locks and lifecycle control against the demo robot: contention, guarded writes, break,
expiry, parent propagation, required scopes; start, restart, shutdown of managed nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error, enc

pytestmark = pytest.mark.integration

ROBOT_NODES = ("actuator", "temp_sensor", "calibration", "lifecycle_standby",
               "lifecycle_worker", "managed_lifecycle")
A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}
COMMAND = "/apps/actuator/data/" + enc("/chassis/brakes/command")
MIN_TEMP = "/apps/temp_sensor/configurations/min_temp"


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    settings = [f"state_dir={tmp}", "locking.cleanup_interval=0.2",
                "locking.defaults.components.breakable=false",
                "locking.defaults.components.lock_required_scopes=[logs]",
                "locking.default_max_expiration=600"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: set(ROBOT_NODES) <= {i["id"] for i in b["items"]},
                   timeout=30)
        g.wait_for("/apps/actuator/data", lambda b: any(
            i["id"] == "/chassis/brakes/command" for i in b["items"]), timeout=20)
        yield g


@pytest.fixture(scope="module")
def host(gw: Gateway) -> str:
    return str(gw.get("/components").json()["items"][0]["id"])


def acquire(gw: Gateway, path: str, headers: dict[str, str], **body: Any) -> Response:
    body.setdefault("lock_expiration", 60)
    return gw.request("POST", f"{path}/locks", body, headers=headers)


def release(gw: Gateway, path: str, lock_id: str, headers: dict[str, str]) -> None:
    assert gw.request("DELETE", f"{path}/locks/{lock_id}", headers=headers).status == 204


def writes(gw: Gateway, headers: dict[str, str]) -> dict[str, Response]:
    """One write per guarded collection of the apps used here."""
    return {
        "data": gw.request("PUT", COMMAND, {"data": 1.5}, headers=headers),
        "configurations": gw.request("PUT", MIN_TEMP, {"value": 84.0}, headers=headers),
        "faults": gw.request("DELETE", "/apps/temp_sensor/faults", headers=headers),
        "logs": gw.request("PUT", "/apps/temp_sensor/logs/configuration",
                           {"severity_filter": "info"}, headers=headers),
        "operations": gw.request("POST", "/apps/calibration/operations/calibrate/executions",
                                 {}, headers=headers),
    }


def test_two_clients_contend_for_a_lock(gw: Gateway) -> None:
    resp = acquire(gw, "/apps/temp_sensor", A, scopes=["configurations"])
    assert resp.status == 201, resp
    lock = resp.json()
    assert lock["owned"] is True and lock["scopes"] == ["configurations"]
    assert lock["id"].startswith("lock_") and lock["lock_expiration"].endswith("Z")
    assert resp.headers["location"] == f"/api/v1/apps/temp_sensor/locks/{lock['id']}"
    body = assert_error(acquire(gw, "/apps/temp_sensor", B), 409, "invalid-request")
    assert body["parameters"]["existing_lock_id"] == lock["id"]
    assert [i["owned"] for i in gw.get("/apps/temp_sensor/locks", headers=A).json()["items"]] \
        == [True]
    assert gw.get("/apps/temp_sensor/locks", headers=B).json()["items"][0]["owned"] is False
    assert gw.get(f"/apps/temp_sensor/locks/{lock['id']}").json()["owned"] is False
    path = f"/apps/temp_sensor/locks/{lock['id']}"
    assert_error(gw.request("PUT", path, {"lock_expiration": 30}, headers=B), 403, "forbidden")
    assert_error(gw.request("DELETE", path, headers=B), 403, "forbidden")
    assert gw.request("PUT", path, {"lock_expiration": 9999}, headers=A).status == 204
    release(gw, "/apps/temp_sensor", lock["id"], A)
    assert_error(gw.get(path), 404, "resource-not-found")
    assert gw.get("/apps/temp_sensor/locks").json()["items"] == []


def test_lock_request_errors(gw: Gateway) -> None:
    body = assert_error(acquire(gw, "/apps/temp_sensor", {}), 400, "invalid-parameter")
    assert "X-Client-Id" in body["message"]
    body = assert_error(acquire(gw, "/apps/temp_sensor", A, scopes=["nope"]), 400,
                        "invalid-parameter")
    assert "nope" in body["message"]
    assert_error(acquire(gw, "/apps/temp_sensor", A, lock_expiration=0), 400, "invalid-parameter")
    assert_error(gw.request("POST", "/apps/temp_sensor/locks", {}, headers=A), 400)
    assert_error(acquire(gw, "/apps/ghost", A), 404)
    assert gw.request("POST", "/areas/x/locks", {}, headers=A).status in (404, 405)


def test_guarded_writes_refused_while_locked_and_accepted_after(gw: Gateway) -> None:
    locks = {p: acquire(gw, p, A).json()["id"]
             for p in ("/apps/actuator", "/apps/temp_sensor", "/apps/calibration")}
    for collection, resp in writes(gw, B).items():
        body = assert_error(resp, 409, "lock-broken")
        assert body["parameters"]["collection"] == collection, body
        assert body["parameters"]["lock_id"] in locks.values()
        assert body["parameters"]["lock_expiration"].endswith("Z")
    for collection, resp in writes(gw, {}).items():  # no header: another client
        assert resp.status == 409, (collection, resp)
    for collection, resp in writes(gw, A).items():  # the holder writes
        assert resp.status < 300, (collection, resp)
    for path, lock_id in locks.items():
        release(gw, path, lock_id, A)
    for collection, resp in writes(gw, B).items():
        assert resp.status < 300, (collection, resp)


def test_break_lock_and_scope_filtering(gw: Gateway) -> None:
    first = acquire(gw, "/apps/actuator", A, scopes=["data"]).json()
    assert gw.request("PUT", MIN_TEMP, {"value": 85.0}, headers=B).status == 200  # other app
    resp = acquire(gw, "/apps/actuator", B, break_lock=True, scopes=["data", "operations"])
    assert resp.status == 201, resp
    second = resp.json()
    assert second["id"] != first["id"] and second["owned"] is True
    assert_error(gw.get(f"/apps/actuator/locks/{first['id']}"), 404)
    body = assert_error(gw.request("PUT", COMMAND, {"data": 2.0}, headers=A), 409, "lock-broken")
    assert body["parameters"]["lock_id"] == second["id"]
    release(gw, "/apps/actuator", second["id"], B)


def test_parent_component_lock_covers_hosted_apps(gw: Gateway, host: str) -> None:
    lock = acquire(gw, f"/components/{host}", A, scopes=["configurations"]).json()
    try:
        body = assert_error(gw.request("PUT", MIN_TEMP, {"value": 86.0}, headers=B), 409,
                            "lock-broken")
        assert body["parameters"]["entity_id"] == host
        assert body["parameters"]["lock_id"] == lock["id"]
        assert gw.request("PUT", MIN_TEMP, {"value": 86.0}, headers=A).status == 200
        assert gw.request("PUT", COMMAND, {"data": 1.0}, headers=B).status == 200  # not covered
        # the component type is configured non-breakable
        body = assert_error(acquire(gw, f"/components/{host}", B, break_lock=True), 409,
                            "invalid-request")
        assert "not breakable" in body["message"]
    finally:
        release(gw, f"/components/{host}", lock["id"], A)


def test_required_scope_needs_the_callers_own_lock(gw: Gateway, host: str) -> None:
    path = f"/components/{host}/logs/configuration"
    body = assert_error(gw.request("PUT", path, {"max_entries": 50}, headers=A), 409,
                        "invalid-request")
    assert body["parameters"]["collection"] == "logs"
    assert body["parameters"]["details"].startswith("A lock must be held")
    lock = acquire(gw, f"/components/{host}", A, scopes=["logs"]).json()
    assert gw.request("PUT", path, {"max_entries": 50}, headers=A).status == 204
    assert_error(gw.request("PUT", path, {"max_entries": 50}, headers=B), 409)
    release(gw, f"/components/{host}", lock["id"], A)


def test_expiry_frees_the_entity(gw: Gateway) -> None:
    lock = acquire(gw, "/apps/actuator", A, lock_expiration=4).json()
    assert_error(gw.request("PUT", COMMAND, {"data": 3.0}, headers=B), 409)
    gw.wait_for("/apps/actuator/locks", lambda b: b["items"] == [], timeout=30)
    assert gw.request("PUT", COMMAND, {"data": 3.0}, headers=B).status == 200
    assert_error(gw.request("DELETE", f"/apps/actuator/locks/{lock['id']}", headers=A), 404)


def wait_state(gw: Gateway, app: str, state: str) -> dict[str, Any]:
    return gw.wait_for(f"/apps/{app}/status", lambda b: b["x-vendor"].get("lifecycle", {})
                       .get("state") == state and b["x-vendor"]["lifecycle"]
                       .get("transition", {}).get("status") != "inProgress", timeout=30)


def transition(gw: Gateway, app: str, name: str) -> dict[str, Any]:
    resp = gw.request("PUT", f"/apps/{app}/status/{name}")
    assert resp.status == 202, resp
    assert resp.headers["location"] == f"/api/v1/apps/{app}/status"
    body = resp.json()
    assert body["id"] == app and body["transition"] == name
    return body  # type: ignore[no-any-return]


def test_start_and_restart_an_unconfigured_node(gw: Gateway) -> None:
    body = gw.get("/apps/lifecycle_standby/status").json()
    assert body["status"] == "notReady"
    assert body["restart"] == "/api/v1/apps/lifecycle_standby/status/restart"
    assert "start" not in gw.get("/apps/temp_sensor/status").json()  # a plain node
    assert body["x-vendor"]["lifecycle"]["state"] == "unconfigured"
    answer = transition(gw, "lifecycle_standby", "start")
    assert answer["apps"][0]["steps"] == ["configure", "activate"]
    body = wait_state(gw, "lifecycle_standby", "active")
    assert body["status"] == "ready"
    assert body["x-vendor"]["lifecycle"]["transition"]["status"] == "completed"
    transition(gw, "lifecycle_standby", "restart")
    body = wait_state(gw, "lifecycle_standby", "active")
    assert body["x-vendor"]["lifecycle"]["transition"]["done"] == [
        "deactivate", "cleanup", "configure", "activate"]


def test_shutdown_then_start_is_refused(gw: Gateway) -> None:
    assert gw.get("/apps/lifecycle_worker/status").json()["status"] == "ready"
    transition(gw, "lifecycle_worker", "shutdown")
    body = wait_state(gw, "lifecycle_worker", "finalized")
    assert body["status"] == "notReady"
    assert body["x-vendor"]["lifecycle"]["transition"]["done"] == [
        "deactivate", "cleanup", "unconfigured_shutdown"]
    body = assert_error(gw.request("PUT", "/apps/lifecycle_worker/status/start"), 409,
                        "precondition-not-fulfilled")
    assert "finalized" in body["message"]


def test_force_shutdown_and_plain_nodes(gw: Gateway) -> None:
    transition(gw, "managed_lifecycle", "force-shutdown")
    body = wait_state(gw, "managed_lifecycle", "finalized")
    assert body["x-vendor"]["lifecycle"]["transition"]["done"] == ["active_shutdown"]
    body = assert_error(gw.request("PUT", "/apps/temp_sensor/status/restart"), 501)
    assert body["message"] == "Lifecycle control not available for this entity"
    details = body["parameters"]["details"]
    assert "plain node" in details and "/powertrain/engine/temp_sensor" in details


def test_lifecycle_control_is_lock_guarded(gw: Gateway) -> None:
    lock = acquire(gw, "/apps/lifecycle_standby", A, scopes=["modes"]).json()
    body = assert_error(gw.request("PUT", "/apps/lifecycle_standby/status/restart",
                                   headers=B), 409, "lock-broken")
    assert body["parameters"]["collection"] == "modes"
    release(gw, "/apps/lifecycle_standby", lock["id"], A)


def test_component_transition_refused_while_a_managed_app_is_locked(gw: Gateway,
                                                                    host: str) -> None:
    lock = acquire(gw, "/apps/lifecycle_standby", A, scopes=["modes"]).json()
    try:
        resp = gw.request("PUT", f"{host_path(host)}/status/restart", headers=B)
        body = assert_error(resp, 409, "lock-broken")
        assert body["parameters"]["collection"] == "modes"
        assert [m["app_id"] for m in body["parameters"]["locked_members"]] == [
            "lifecycle_standby"]
    finally:
        release(gw, "/apps/lifecycle_standby", lock["id"], A)


def host_path(host: str) -> str:
    return f"/components/{host}"


def test_global_fault_clear_skips_locked_entities(gw: Gateway, ros: Any) -> None:
    from tests.integration.test_faults_support import faults_by_code, wait_until

    locked, free = ros.node("fault_src_locked"), ros.node("fault_src_free")
    gw.wait_for("/apps", lambda b: {"fault_src_locked", "fault_src_free"} <= {
        i["id"] for i in b["items"]}, timeout=20)
    ros.reporter(locked).report("LOCKED_FAULT", 2, "on a locked app")
    ros.reporter(free).report("FREE_FAULT", 2, "on a free app")
    wait_until(lambda: {"LOCKED_FAULT", "FREE_FAULT"} <= set(faults_by_code(gw)), 20,
               "both faults")
    lock = acquire(gw, "/apps/fault_src_locked", A, scopes=["faults"]).json()
    assert gw.request("DELETE", "/faults", headers=B).status == 204  # never 409
    left = faults_by_code(gw)
    assert "LOCKED_FAULT" in left and "FREE_FAULT" not in left
    assert gw.request("DELETE", "/faults", headers=A).status == 204  # the holder clears it
    assert "LOCKED_FAULT" not in faults_by_code(gw)
    release(gw, "/apps/fault_src_locked", lock["id"], A)


def test_component_transition_covers_its_managed_apps(gw: Gateway, host: str) -> None:
    # after the tests above: standby is active, worker and managed_lifecycle are finalized
    resp = gw.request("PUT", f"/components/{host}/status/start")
    assert resp.status == 202, resp
    body = resp.json()
    assert [a["app_id"] for a in body["apps"]] == ["lifecycle_standby"]
    assert body["apps"][0]["steps"] == [] and body["status"] == "completed"
    skipped = body["x-vendor"]["skipped"]
    assert any(s.startswith("temp_sensor: plain node") for s in skipped)
    assert any(s.startswith("lifecycle_worker:") and "finalized" in s for s in skipped)
    assert resp.headers["location"] == f"/api/v1/components/{host}/status"


def test_openapi_declares_the_new_routes(gw: Gateway) -> None:
    doc = gw.get("/docs").json()
    post = doc["paths"]["/apps/{app_id}/locks"]["post"]
    assert set(post["responses"]) >= {"201", "400", "404"}
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/LockRequest")
    assert post["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/Lock")
    assert "204" in doc["paths"]["/apps/{app_id}/locks/{lock_id}"]["delete"]["responses"]
    assert "202" in doc["paths"]["/components/{component_id}/status/shutdown"]["put"][
        "responses"]
    upload = doc["paths"]["/apps/{app_id}/scripts"]["post"]
    assert "multipart/form-data" in upload["requestBody"]["content"]
    schemas = doc["components"]["schemas"]
    assert {"Lock", "LockRequest", "Script", "ScriptExecution", "LifecycleTransition"} <= set(
        schemas)
    caps = {c["name"] for c in gw.get("/apps/temp_sensor").json()["capabilities"]}
    assert "locks" in caps and "scripts" not in caps  # no scripts backend on this gateway
