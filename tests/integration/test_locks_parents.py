"""Locks with authentication: the owner is the token's subject as well as the client id (the
lock routes through a locked app's parents: tests/locks/test_inproc_locks_parents.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import assert_error
from tests.integration.test_security_helpers import SecureGateway, auth_settings, bearer

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor",)
A = {"X-Client-Id": "client-a"}


def acquire(gw: SecureGateway, path: str, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    body.setdefault("lock_expiration", 120)
    resp = gw.request("POST", f"{path}/locks", body, headers=headers)
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


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
