"""Locks and lifecycle control against the demo robot: two clients contend for a lock over a
guarded parameter write; start, restart, shutdown of managed nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error

pytestmark = pytest.mark.integration

ROBOT_NODES = ("actuator", "temp_sensor", "calibration", "lifecycle_standby",
               "lifecycle_worker", "managed_lifecycle")
A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}
MIN_TEMP = "/apps/temp_sensor/configurations/min_temp"


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    settings = [f"state_dir={tmp}", "locking.default_max_expiration=600"]
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


def test_two_clients_contend_for_a_lock(gw: Gateway) -> None:
    resp = acquire(gw, "/apps/temp_sensor", A, scopes=["configurations"])
    assert resp.status == 201, resp
    lock = resp.json()
    assert lock["owned"] is True and lock["scopes"] == ["configurations"]
    assert lock["id"].startswith("lock_") and lock["lock_expiration"].endswith("Z")
    assert resp.headers["location"] == f"/api/v1/apps/temp_sensor/locks/{lock['id']}"
    body = assert_error(acquire(gw, "/apps/temp_sensor", B), 409, "invalid-request")
    assert body["parameters"]["existing_lock_id"] == lock["id"]
    body = assert_error(gw.request("PUT", MIN_TEMP, {"value": 84.0}, headers=B), 409,
                        "lock-broken")
    assert body["parameters"]["lock_id"] == lock["id"]
    assert gw.request("PUT", MIN_TEMP, {"value": 84.0}, headers=A).status == 200
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

