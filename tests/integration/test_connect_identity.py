"""Robots connecting out prove their own names; a robot's tunnel port refuses other users.

A primary (no nodes of its own) accepts robots by aggregation.connect_token; one robot
gateway (the demo robot's node) connects out to it on loopback with its own token, issued by
`diag-gateway robot-token` from the key the primary made in its state directory. Fake robots
are WebSocket clients of this test.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

from gateway.federation.connect_auth import robot_token
from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

ROBOT_NODES = ("calibration",)
SECRET = "connect-identity-secret-" + str(os.getpid())
CAP = 3  # robot1 and two more
ATTEMPTS_PER_MINUTE = 40


def next_domain(config: pytest.Config) -> int:
    """One more domain of this session's counter (the `domain` fixture's, tests/conftest.py)."""
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", "").endswith(f"tests{os.sep}conftest.py"):
            return next(plugin._domains)  # type: ignore[no-any-return]
    raise RuntimeError("tests/conftest.py is not loaded")


@pytest.fixture(scope="module")
def primary_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("primary")


@pytest.fixture(scope="module")
def primary(primary_state: Path, request: pytest.FixtureRequest) -> Iterator[Gateway]:
    d = primary_state
    settings = [f"state_dir={d / 'state'}", "aggregation.enabled=true",
                f"aggregation.connect_token={SECRET}",
                f"aggregation.max_connected_robots={CAP}",
                f"aggregation.connect_attempts_per_minute={ATTEMPTS_PER_MINUTE}"]
    with Gateway(free_port(), next_domain(request.config), settings, d / "primary.log") as g:
        yield g


def issued(primary_state: Path, name: str) -> str:
    """Robot `name`'s own token as the operator prints it on the primary's host."""
    out = subprocess.run([sys.executable, "-m", "gateway", "robot-token", "--set",
                          f"state_dir={primary_state / 'state'}", name],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    printed, token = out.split()
    assert printed == name
    return token


@pytest.fixture(scope="module")
def robot1(primary: Gateway, primary_state: Path, robot: Any, domain: int,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    d = tmp_path_factory.mktemp("robot1")
    settings = [f"state_dir={d / 'state'}", "aggregation.mdns_name=robot1",
                f"aggregation.connect_to=http://127.0.0.1:{primary.port}",
                f"aggregation.connect_robot_token={issued(primary_state, 'robot1')}"]
    with Gateway(free_port(), domain, settings, d / "robot1.log") as g:
        primary.wait_for("/apps", lambda b: any(i["id"] == "calibration" for i in b["items"]),
                         timeout=60)
        yield g


def peers(primary: Gateway) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in primary.get("/health").json()["peers"]}


def robot1_online(primary: Gateway) -> dict[str, Any]:
    return primary.wait_for("/health", lambda b: any(
        p["name"] == "robot1" and p["status"] == "online" for p in b["peers"]), timeout=60)


class Fake:
    """A fake robot's WebSocket, held open until closed."""

    def __init__(self, primary: Gateway, name: str, token: str) -> None:
        self.url = f"http://127.0.0.1:{primary.port}/api/v1/x-vendor-connect?name={name}"
        self.headers = {"X-Vendor-Connect-Token": token}
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None

    async def open(self) -> tuple[int, dict[str, Any] | None]:
        """(101, None) when connected, else (status, error body)."""
        self.session = aiohttp.ClientSession()
        try:
            self.ws = await self.session.ws_connect(self.url, headers=self.headers)
            return 101, None
        except aiohttp.WSServerHandshakeError:
            pass
        async with self.session.get(self.url, headers=self.headers) as resp:
            body = await resp.json(content_type=None)
            await self.session.close()
            return resp.status, body

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()


def attempt(primary: Gateway, name: str, token: str) -> tuple[int, dict[str, Any] | None]:
    """One connect attempt, closed at once: (status, error body or None)."""
    async def run() -> tuple[int, dict[str, Any] | None]:
        fake = Fake(primary, name, token)
        try:
            return await fake.open()
        finally:
            await fake.close()
    return asyncio.run(run())


def test_a_robot_joins_with_its_own_token(primary: Gateway, primary_state: Path,
                                          robot1: Gateway) -> None:
    robot1_online(primary)
    assert primary.get("/apps/calibration/configurations").status == 200  # forwarded
    key = primary_state / "state" / "federation" / "connect_robot_key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert SECRET not in key.read_text()


def test_the_shared_token_cannot_take_a_connected_robots_name(
        primary: Gateway, primary_state: Path, robot1: Gateway) -> None:
    url = robot1_online(primary) and peers(primary)["robot1"]["url"]
    status, body = attempt(primary, "robot1", SECRET)
    assert status == 409, body
    assert body is not None and body["error_code"] == "invalid-request"
    assert "robot1" in body["message"]
    # a token computed from the shared secret (as robot tokens once were) names no robot
    status, body = attempt(primary, "robot1", robot_token(SECRET, "robot1"))
    assert status == 409, body
    assert body is not None and "robot1" in body["message"]
    # another robot's own token names only that robot
    status, body = attempt(primary, "robot1", issued(primary_state, "robot2"))
    assert status == 401 and body is not None and body["error_code"] == "unauthorized"
    assert peers(primary)["robot1"]["url"] == url  # the real robot kept its tunnel
    assert peers(primary)["robot1"]["status"] == "online"
    log = (primary_state / "primary.log").read_text()
    assert log.count("robot connection 'robot1' from 127.0.0.1 refused (409)") >= 2


def test_the_robots_own_token_may_replace_its_tunnel(primary: Gateway, primary_state: Path,
                                                     robot1: Gateway) -> None:
    robot1_online(primary)
    token = issued(primary_state, "robot1")

    async def run() -> int:
        fake = Fake(primary, "robot1", token)
        status, _ = await fake.open()
        await fake.close()
        return status
    assert asyncio.run(run()) == 101  # as the robot reconnecting after a network drop would
    robot1_online(primary)  # the real robot reconnects with its own token


def test_connected_robots_are_capped(primary: Gateway, robot1: Gateway) -> None:
    robot1_online(primary)

    async def run() -> tuple[list[int], int, dict[str, Any] | None]:
        fakes = [Fake(primary, f"extra{i}", SECRET) for i in range(CAP - 1)]
        try:
            held = [(await f.open())[0] for f in fakes]
            fakes.append(Fake(primary, "one_too_many", SECRET))
            status, body = await fakes[-1].open()
            return held, status, body
        finally:
            for f in fakes:
                await f.close()
    held, status, body = asyncio.run(run())
    assert held == [101] * (CAP - 1)
    assert status == 503, body
    assert body is not None and "one_too_many" in body["message"]
    assert "max_connected_robots" in body["message"]
    primary.wait_for("/health", lambda b: {p["name"] for p in b["peers"]} == {"robot1"},
                     timeout=30)


def test_the_tunnel_port_refuses_other_local_users(primary: Gateway, robot1: Gateway) -> None:
    robot1_online(primary)
    param = primary.get("/apps/calibration/configurations").json()["items"][0]
    path = f"/api/v1/apps/calibration/configurations/{param['id']}"
    parts = urlsplit(peers(primary)["robot1"]["url"])
    assert parts.hostname == "127.0.0.1" and parts.port
    for method, body in (("GET", None), ("PUT", b'{"data": 1}')):
        conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        assert resp.status == 401, raw
        assert b'"unauthorized"' in raw
    # the primary's own calls through the same port still work
    assert primary.get("/apps/calibration/configurations").status == 200
    assert peers(primary)["robot1"]["status"] == "online"


def test_connect_attempts_are_limited_per_address(primary: Gateway, robot1: Gateway) -> None:
    statuses = [attempt(primary, "nobody", "wrong-token")[0]
                for _ in range(ATTEMPTS_PER_MINUTE + 1)]
    assert 429 in statuses, statuses
    status, body = attempt(primary, "nobody", "wrong-token")
    assert status == 429 and body is not None
    assert "connect_attempts_per_minute" in body["message"]
    assert body["parameters"]["status"] == 429
