"""Locks hold through every route that reaches the locked app: member-qualified and bare item
ids on its component, function and area, collection resets, fault clears, publishes and
operations; a component's required scopes hold through its area; expiry acts at the expiry
instant; with authentication the owner is the token's subject as well as the client id."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error, enc
from tests.integration.test_security_helpers import SecureGateway, auth_settings, bearer

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "calibration")
ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "demo_manifest.yaml"
A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}
BOARD = "/components/engine-sensor-board"  # hosts temp_sensor (and rpm_sensor)
ECU = "/components/engine-ecu"  # hosts calibration; its manifest requires a configurations lock
AREA, FUNCTION = "/areas/engine", "/functions/engine-monitoring"
TOPIC = "/powertrain/engine/temperature"
FAULT_NODE = "rpm_sensor"  # a node of this test in /powertrain/engine: the manifest's rpm_sensor


def start(domain: int, tmp: Path) -> Gateway:
    settings = ["discovery.mode=hybrid", f"discovery.manifest_path={MANIFEST}",
                "discovery.refresh_debounce_ms=100", f"state_dir={tmp}",
                "locking.cleanup_interval=60", "locking.default_max_expiration=600"]
    return Gateway(free_port(), domain, settings, tmp / "gateway.log").start()


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    g = start(domain, tmp_path_factory.mktemp("gw"))
    try:
        g.wait_for("/apps", lambda b: {"temp_sensor", "calibration"} <= {
            i["id"] for i in b["items"] if i["x-vendor"]["is_online"]}, timeout=40)
        g.wait_for(f"{BOARD}/configurations", lambda b: any(
            i["id"] == "temp_sensor:publish_rate" for i in b["items"]), timeout=30)
        g.wait_for(f"{ECU}/operations", lambda b: any(
            i["id"] == "calibrate" for i in b["items"]), timeout=30)
        yield g
    finally:
        g.stop()


@pytest.fixture(scope="module")
def reporter(gw: Gateway, ros: Any) -> Any:
    """A reporter of the manifest's rpm_sensor app (its node runs in this test)."""
    node = ros.node(FAULT_NODE, namespace="/powertrain/engine")
    gw.wait_for("/apps", lambda b: any(i["id"] == FAULT_NODE and i["x-vendor"]["is_online"]
                                       for i in b["items"]), timeout=30)
    return ros.reporter(node)


def acquire(gw: Gateway, path: str, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    body.setdefault("lock_expiration", 120)
    resp = gw.request("POST", f"{path}/locks", body, headers=headers)
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


def release(gw: Gateway, path: str, lock: dict[str, Any], headers: dict[str, str]) -> None:
    assert gw.request("DELETE", f"{path}/locks/{lock['id']}", headers=headers).status == 204


def refused_by(resp: Response, member: str, collection: str) -> dict[str, Any]:
    """A 409 that names the locked member."""
    assert resp.status == 409, resp
    body = resp.json()
    members = [m["app_id"] for m in body["parameters"]["locked_members"]]
    assert member in members and member in body["message"], body
    assert body["parameters"]["collection"] == collection, body
    return body  # type: ignore[no-any-return]


def publish_rate(gw: Gateway) -> float:
    return float(gw.get("/apps/temp_sensor/configurations/publish_rate").json()["data"])


def test_parameters_of_a_locked_app_through_its_component_function_and_area(
        gw: Gateway) -> None:
    assert gw.request("PUT", "/apps/temp_sensor/configurations/publish_rate",
                      {"data": 3.0}).status == 200
    lock = acquire(gw, "/apps/temp_sensor", A, scopes=["configurations"])
    try:
        for parent in (BOARD, FUNCTION, AREA):
            for item in ("temp_sensor:publish_rate", "publish_rate"):
                path = f"{parent}/configurations/{item}"
                body = refused_by(gw.request("PUT", path, {"data": 7.0}, headers=B),
                                  "temp_sensor", "configurations")
                assert "nothing was changed" in body["message"]
                refused_by(gw.request("DELETE", path, headers=B), "temp_sensor",
                           "configurations")
                refused_by(gw.request("PUT", path, {"data": 7.0}), "temp_sensor",
                           "configurations")  # no client id: another client
        for parent in (BOARD, FUNCTION):  # a collection reset: refused whole, nothing reset
            refused_by(gw.request("DELETE", f"{parent}/configurations", headers=B),
                       "temp_sensor", "configurations")
        assert publish_rate(gw) == 3.0
        # the holder writes through the parent
        resp = gw.request("PUT", f"{BOARD}/configurations/temp_sensor:publish_rate",
                          {"data": 4.0}, headers=A)
        assert resp.status == 200, resp
        assert publish_rate(gw) == 4.0
    finally:
        release(gw, "/apps/temp_sensor", lock, A)
    resp = gw.request("PUT", f"{FUNCTION}/configurations/publish_rate", {"data": 5.0},
                      headers=B)
    assert resp.status == 200 and publish_rate(gw) == 5.0, resp
    resp = gw.request("DELETE", f"{BOARD}/configurations", headers=B)  # temp_sensor reset
    assert resp.status != 409 and publish_rate(gw) == 2.0, resp  # the value first seen


def test_a_components_required_scope_holds_through_its_area(gw: Gateway) -> None:
    path = f"{AREA}/configurations/calibration:calibration_offset"
    body = assert_error(gw.request("PUT", path, {"data": 0.5}, headers=B), 409,
                        "invalid-request")
    assert body["parameters"]["entity_id"] == "engine-ecu", body
    assert body["parameters"]["collection"] == "configurations"
    assert "engine-ecu" in body["message"]
    assert_error(gw.request("DELETE", path, headers=B), 409, "invalid-request")
    assert_error(gw.request("PUT", f"{ECU}/configurations/calibration:calibration_offset",
                            {"data": 0.5}, headers=B), 409, "invalid-request")  # as before
    lock = acquire(gw, ECU, B, scopes=["configurations"])
    try:
        resp = gw.request("PUT", path, {"data": 0.5}, headers=B)
        assert resp.status == 200, resp
        refused_by(gw.request("PUT", path, {"data": 0.25}, headers=A), "calibration",
                   "configurations")  # the lock is B's
    finally:
        release(gw, ECU, lock, B)


def test_publishes_and_operations_of_a_locked_app_through_its_parents(gw: Gateway) -> None:
    data_ids = [i["id"] for i in gw.get(f"{BOARD}/data").json()["items"]
                if i["x-vendor"].get("ros2", {}).get("topic", i["id"]) == TOPIC]
    assert data_ids, gw.get(f"{BOARD}/data").json()
    message = {"temperature": 20.0, "variance": 0.0}
    locks = [acquire(gw, "/apps/temp_sensor", A, scopes=["data"]),
             acquire(gw, "/apps/calibration", A, scopes=["operations"])]
    try:
        for parent in (BOARD, FUNCTION, AREA):
            for item in {data_ids[0], enc(TOPIC), "temp_sensor:" + enc(TOPIC)}:
                refused_by(gw.request("PUT", f"{parent}/data/{item}", message, headers=B),
                           "temp_sensor", "data")
        for parent in (ECU, AREA):
            refused_by(gw.request("POST", f"{parent}/operations/calibrate/executions", {},
                                  headers=B), "calibration", "operations")
        resp = gw.request("POST", f"{ECU}/operations/calibrate/executions", {}, headers=A)
        assert resp.status == 200, resp
        resp = gw.request("PUT", f"{BOARD}/data/{enc(TOPIC)}", message, headers=A)
        assert resp.status == 200, resp
    finally:
        release(gw, "/apps/temp_sensor", locks[0], A)
        release(gw, "/apps/calibration", locks[1], A)
    assert gw.request("POST", f"{AREA}/operations/calibrate/executions", {},
                      headers=B).status == 200


def open_faults(gw: Gateway) -> set[str]:
    return {f["fault_code"] for f in gw.get(f"/apps/{FAULT_NODE}/faults").json()["items"]}


def test_fault_clears_of_a_locked_app_through_its_parents(gw: Gateway, reporter: Any) -> None:
    codes = {f"PARENT_ROUTE_{n}" for n in range(5)}
    for code in sorted(codes):
        reporter.report(code, 2, "reported for the lock test")
    gw.wait_for(f"/apps/{FAULT_NODE}/faults", lambda b: codes <= {
        f["fault_code"] for f in b["items"]}, timeout=30)
    lock = acquire(gw, f"/apps/{FAULT_NODE}", A, scopes=["faults"])
    try:
        for parent in (BOARD, FUNCTION, AREA):
            refused_by(gw.request("DELETE", f"{parent}/faults", headers=B), FAULT_NODE,
                       "faults")
            refused_by(gw.request("DELETE", f"{parent}/faults/PARENT_ROUTE_0", headers=B),
                       FAULT_NODE, "faults")
        assert codes <= open_faults(gw)  # 5 faults, none cleared
        assert gw.request("DELETE", f"{AREA}/faults/PARENT_ROUTE_0", headers=A).status == 204
        assert "PARENT_ROUTE_0" not in open_faults(gw)
    finally:
        release(gw, f"/apps/{FAULT_NODE}", lock, A)
    assert gw.request("DELETE", f"{FUNCTION}/faults", headers=B).status == 204
    assert not codes & open_faults(gw)


def test_expiry_ends_the_cyclic_subscriptions_at_the_expiry_instant(gw: Gateway) -> None:
    lock = acquire(gw, "/apps/temp_sensor", A, lock_expiration=2)
    sub = gw.request("POST", "/apps/temp_sensor/cyclic-subscriptions",
                     {"resource": "/api/v1/apps/temp_sensor/data" + TOPIC,
                      "interval": "slow", "duration": 300}, headers=A)
    assert sub.status == 201, sub
    path = f"/apps/temp_sensor/cyclic-subscriptions/{sub.json()['id']}"
    assert gw.get(path).status == 200
    started = time.monotonic()
    # the cleanup sweep runs every 60 s here: only the lock's own timer ends it in time
    gw.wait_for("/apps/temp_sensor/locks", lambda b: b["items"] == [], timeout=15)
    deadline = time.monotonic() + 15
    while gw.get(path).status != 404:
        assert time.monotonic() < deadline, "the subscription outlived its lock"
        time.sleep(0.1)
    assert time.monotonic() - started < 30
    assert_error(gw.request("DELETE", f"/apps/temp_sensor/locks/{lock['id']}", headers=A),
                 404)


def test_lock_ids_differ_across_restarts(robot: Robot, domain: int,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    ids = []
    for _ in range(2):
        g = start(domain, tmp_path_factory.mktemp("restart"))
        try:
            g.wait_for("/apps", lambda b: "temp_sensor" in {i["id"] for i in b["items"]},
                       timeout=40)
            ids.append(acquire(g, "/apps/temp_sensor", A)["id"])
        finally:
            g.stop()
    assert ids[0] != ids[1], ids


@pytest.fixture(scope="module")
def secured(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[SecureGateway]:
    tmp = tmp_path_factory.mktemp("secured")
    g = SecureGateway(free_port(), domain, auth_settings(tmp, "write"), tmp / "gateway.log")
    g.start()
    try:
        g.wait_for("/apps", lambda b: "temp_sensor" in {i["id"] for i in b["items"]},
                   timeout=40)
        yield g
    finally:
        g.stop()


def test_with_auth_the_owner_is_the_tokens_subject_and_the_client_id(
        secured: SecureGateway) -> None:
    owner = {**A, **bearer(secured.token("configurator-client", "configurator-secret")["access_token"])}
    other = {**A, **bearer(secured.token("admin-client", "admin-secret")["access_token"])}
    lock = acquire(secured, "/apps/temp_sensor", owner, scopes=["configurations"])
    path = f"/apps/temp_sensor/locks/{lock['id']}"
    # another authenticated client sending the same X-Client-Id neither releases nor uses it
    assert_error(secured.request("DELETE", path, headers=other), 403, "forbidden")
    assert_error(secured.request("PUT", path, {"lock_expiration": 30}, headers=other), 403)
    assert_error(secured.request("PUT", "/apps/temp_sensor/configurations/publish_rate",
                                 {"data": 2.0}, headers=other), 409, "lock-broken")
    resp = secured.request("PUT", "/apps/temp_sensor/configurations/publish_rate",
                           {"data": 2.0}, headers=owner)
    assert resp.status == 200, resp
    assert secured.request("DELETE", path, headers=owner).status == 204
