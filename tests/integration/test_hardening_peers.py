"""Hardening of peer calls: a trickling forward ends in 504, a junk-answering peer is offline.

A primary (no nodes of its own) and one peer gateway with a robot node, the peer behind the
junk proxy of the fleet tests that can spoil its answers; each gateway in its own domain.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.fleet.junk import JunkProxy
from tests.harness import Gateway, assert_error

pytestmark = pytest.mark.integration

ROBOT_NODES = ("calibration",)
FORWARD_MS = 1500


@pytest.fixture(scope="module")
def proxy(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[JunkProxy]:
    d = tmp_path_factory.mktemp("peer")
    with Gateway(free_port(), domain, [f"state_dir={d / 'state'}"], d / "peer.log") as peer:
        peer.wait_for("/apps", lambda b: any(i["id"] == "calibration" for i in b["items"]),
                      timeout=30)
        with JunkProxy(peer.port) as junk:
            yield junk


def next_domain(config: pytest.Config) -> int:
    """One more domain of this session's counter (the `domain` fixture's, tests/conftest.py)."""
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", "").endswith(f"tests{os.sep}conftest.py"):
            return next(plugin._domains)  # type: ignore[no-any-return]
    raise RuntimeError("tests/conftest.py is not loaded")


@pytest.fixture(scope="module")
def primary(proxy: JunkProxy, tmp_path_factory: pytest.TempPathFactory,
            request: pytest.FixtureRequest) -> Iterator[Gateway]:
    d = tmp_path_factory.mktemp("primary")
    own_domain = next_domain(request.config)  # no nodes: all it serves is the peer's
    settings = [f"state_dir={d / 'state'}", "aggregation.enabled=true",
                f"aggregation.peer_urls=[http://127.0.0.1:{proxy.port}]",
                "aggregation.peer_names=[robot]", "aggregation.timeout_ms=1000",
                f"aggregation.forward_timeout_ms={FORWARD_MS}"]
    with Gateway(free_port(), own_domain, settings, Path(d) / "primary.log") as g:
        g.wait_for("/apps", lambda b: any(i["id"] == "calibration" for i in b["items"]),
                   timeout=30)
        yield g


def app(g: Gateway) -> dict[str, Any]:
    return next(i for i in g.get("/apps").json()["items"] if i["id"] == "calibration")


def flag(apps: dict[str, Any]) -> Any:
    """The peer app's `available` flag in an /apps answer (None: not flagged)."""
    item = next(i for i in apps["items"] if i["id"] == "calibration")
    return item["x-vendor"].get("available")


def test_a_trickling_peer_answer_ends_in_504(primary: Gateway, proxy: JunkProxy) -> None:
    assert primary.get("/apps/calibration/configurations").status == 200  # forwarded
    proxy.rules = {r"/apps/calibration/configurations$": "trickle"}
    try:
        resp = primary.get("/apps/calibration/configurations", timeout=60)
    finally:
        proxy.rules = {}
    body = assert_error(resp, 504, "not-responding")
    assert body["parameters"]["budget"] == "aggregation.forward_timeout_ms"


def test_a_peer_answering_junk_health_is_offline(primary: Gateway, proxy: JunkProxy) -> None:
    primary.wait_for("/health", lambda h: h["peers"][0]["status"] == "online", timeout=20)
    assert "available" not in app(primary)["x-vendor"]
    # 200 but not JSON; then 200 JSON that is not a health document
    for junk in ("garbage", "oversize"):
        proxy.rules = {r"/api/v1/health$": junk}
        try:
            primary.wait_for("/health", lambda h: h["peers"][0]["status"] == "offline",
                             timeout=20)
            primary.wait_for("/apps", lambda b: flag(b) is False, timeout=20)
        finally:
            proxy.rules = {}
        primary.wait_for("/health", lambda h: h["peers"][0]["status"] == "online", timeout=20)
        primary.wait_for("/apps", lambda b: flag(b) is None, timeout=20)
