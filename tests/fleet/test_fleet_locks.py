"""Locks through a primary: a lock on a robot's app lives on the robot and holds through the
primary's function routes; a lock on a component the primary and the robot both contribute
is taken on both gateways, extended and released on both."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fleet.conftest import FleetPair, primary_with_robot
from tests.harness import Gateway, assert_error
from tests.integration.test_security_helpers import SECRET, auth_settings, bearer, mint

pytestmark = pytest.mark.integration

A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}
RATE = "/apps/temp_sensor/configurations/publish_rate"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetPair]:
    logs = tmp_path_factory.mktemp("fleetlocks")
    with primary_with_robot(logs, ("temp_sensor", "calibration"), ("actuator",),
                            [f"state_dir={logs / 'rs'}", "discovery.refresh_debounce_ms=100"],
                            [f"state_dir={logs / 'ps'}", "discovery.refresh_debounce_ms=100"]
                            ) as pair:
        pair.primary.wait_for("/apps", lambda b: {"temp_sensor", "calibration", "actuator"} <= {
            a["id"] for a in b["items"] if a["x-vendor"]["is_online"]}, timeout=60)
        pair.primary.wait_for("/functions/powertrain", lambda b: b["x-vendor"].get(
            "contributors") == ["robot"], timeout=30)
        pair.primary.wait_for("/components", lambda b: len(b["items"]) == 1 and b["items"][0][
            "x-vendor"].get("contributors") == ["local", "robot"], timeout=30)
        yield pair


def host(gw: Gateway) -> str:
    return str(gw.get("/components").json()["items"][0]["id"])


def acquire(gw: Gateway, path: str, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    body.setdefault("lock_expiration", 120)
    resp = gw.request("POST", f"{path}/locks", body, headers=headers)
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


def test_a_robot_apps_lock_holds_through_the_primarys_function_routes(pair: FleetPair) -> None:
    primary, robot = pair.primary, pair.robot
    lock = acquire(primary, "/apps/temp_sensor", A, scopes=["configurations"])
    assert [i["id"] for i in robot.get("/apps/temp_sensor/locks").json()["items"]] == [
        lock["id"]]  # the lock lives on the robot
    try:
        for item in ("temp_sensor:publish_rate", "publish_rate"):
            path = f"/functions/powertrain/configurations/{item}"
            resp = primary.request("PUT", path, {"data": 7.0}, headers=B)
            assert resp.status == 409, resp
            assert primary.request("DELETE", path, headers=B).status == 409
        assert primary.request("DELETE", "/functions/powertrain/configurations",
                               headers=B).status == 409
        assert primary.request("PUT", RATE, {"data": 7.0}, headers=B).status == 409
        resp = primary.request("PUT", "/functions/powertrain/configurations/publish_rate",
                               {"data": 3.0}, headers=A)
        assert resp.status == 200, resp
    finally:
        assert primary.request("DELETE", f"/apps/temp_sensor/locks/{lock['id']}",
                               headers=A).status == 204
    assert primary.request("PUT", "/functions/powertrain/configurations/publish_rate",
                           {"data": 2.0}, headers=B).status == 200


def test_a_lock_on_a_mixed_component_is_taken_on_every_gateway_owning_a_member(
        pair: FleetPair) -> None:
    primary, robot = pair.primary, pair.robot
    comp = f"/components/{host(primary)}"
    assert host(robot) == host(primary)  # one host: the primary merges the two components
    lock = acquire(primary, comp, A, scopes=["configurations"])
    held = robot.get(f"{comp}/locks", headers=A).json()["items"]
    assert len(held) == 1 and held[0]["owned"] is True and held[0]["scopes"] == [
        "configurations"]
    # another client is refused on the robot itself, and through the primary
    body = assert_error(robot.request("PUT", RATE, {"data": 6.0}, headers=B), 409,
                        "lock-broken")
    assert body["parameters"]["entity_id"] == host(robot)
    assert primary.request("PUT", RATE, {"data": 6.0}, headers=B).status == 409
    assert robot.request("PUT", RATE, {"data": 6.0}, headers=A).status == 200  # the holder
    assert lock["x-vendor"]["gateways"] == ["local", "robot"]
    # a second client's lock is refused where any gateway holds the first
    assert_error(primary.request("POST", f"{comp}/locks", {"lock_expiration": 60},
                                 headers=B), 409, "invalid-request")
    assert primary.request("PUT", f"{comp}/locks/{lock['id']}", {"lock_expiration": 300},
                           headers=A).status == 204
    assert primary.request("DELETE", f"{comp}/locks/{lock['id']}", headers=A).status == 204
    assert robot.get(f"{comp}/locks").json()["items"] == []  # released on the robot too
    assert robot.request("PUT", RATE, {"data": 2.0}, headers=B).status == 200


def test_a_peer_refusal_undoes_the_whole_lock(pair: FleetPair) -> None:
    primary, robot = pair.primary, pair.robot
    comp = f"/components/{host(primary)}"
    theirs = acquire(robot, comp, B)  # held on the robot only
    try:
        body = assert_error(primary.request("POST", f"{comp}/locks", {"lock_expiration": 60},
                                            headers=A), 409)
        assert body["parameters"]["gateway"] == "robot"
        assert "robot" in body["message"]
        assert primary.get(f"{comp}/locks").json()["items"] == []  # nothing kept locally
    finally:
        assert robot.request("DELETE", f"{comp}/locks/{theirs['id']}",
                             headers=B).status == 204


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetPair]:
    """A primary and a robot with tokens on writes; the primary calls the robot with its own
    token (aggregation.peer_auth_header), not the callers'."""
    logs = tmp_path_factory.mktemp("fleetlocksauth")
    peer_token = mint(SECRET, "admin", exp_in_s=3600)
    with primary_with_robot(
            logs, ("temp_sensor",), ("actuator",),
            auth_settings(logs / "rs", "write", "discovery.refresh_debounce_ms=100"),
            auth_settings(logs / "ps", "write", "discovery.refresh_debounce_ms=100",
                          f"aggregation.peer_auth_header=Bearer {peer_token}")) as pair:
        pair.primary.wait_for("/apps", lambda b: {"temp_sensor", "actuator"} <= {
            a["id"] for a in b["items"] if a["x-vendor"]["is_online"]}, timeout=60)
        yield pair


def token(gw: Gateway, client: str) -> dict[str, str]:
    resp = gw.request("POST", "/auth/authorize", {
        "grant_type": "client_credentials", "client_id": client,
        "client_secret": client.replace("-client", "-secret")})
    assert resp.status == 200, resp
    return bearer(resp.json()["access_token"])


def test_through_a_primary_the_owner_is_still_the_callers_subject(secured: FleetPair) -> None:
    primary = secured.primary
    owner = {**A, **token(primary, "configurator-client")}
    other = {**A, **token(primary, "admin-client")}  # another subject, the same client id
    lock = acquire(primary, "/apps/temp_sensor", owner, scopes=["configurations"])
    path = f"/apps/temp_sensor/locks/{lock['id']}"
    assert_error(primary.request("DELETE", path, headers=other), 403, "forbidden")
    assert_error(primary.request("PUT", RATE, {"data": 6.0}, headers=other), 409)
    resp = primary.request("PUT", RATE, {"data": 6.0}, headers=owner)
    assert resp.status == 200, resp
    assert primary.request("DELETE", path, headers=owner).status == 204
