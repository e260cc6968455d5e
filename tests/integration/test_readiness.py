"""Readiness with a real robot: ready once every DDS participant has its nodes known."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.domains import next_domain
from tests.harness import Gateway

ROBOT_NODES = ("temp_sensor", "calibration", "lidar_sensor", "managed_lifecycle")


@pytest.fixture(scope="module")
def domain() -> int:
    """A domain above 100: its DDS ports meet the kernel's ephemeral port range."""
    d = next_domain()
    return d if d > 100 else d + 100


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway started after the robot runs (not yet waited for readiness)."""
    tmp = tmp_path_factory.mktemp("readiness")
    g = Gateway(free_port(), domain, [f"state_dir={tmp / 'state'}"], tmp / "gw.log")
    g.start()
    yield g
    g.stop()


def test_ready_lists_every_robot_node_and_says_why(gw: Gateway) -> None:
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        health = gw.get("/health").json()
        seen.append(health)
        if health["ready"]:
            apps = {i["id"] for i in gw.get("/apps").json()["items"]}
            assert set(ROBOT_NODES) <= apps, apps  # ready: entity lists are complete
            break
        assert health["status"] == "starting", health
        assert health["x-vendor-readiness"]["reason"] is None, health
        time.sleep(0.05)
    health = seen[-1]
    assert health["ready"] and health["status"] == "healthy", health
    why = health["x-vendor-readiness"]
    # one participant per robot node process and the gateway's own; every one's nodes known
    assert why["reason"] == "complete", why
    assert why["dds_participants"] >= len(ROBOT_NODES) + 1, why
    assert why["participants_with_nodes_known"] == why["dds_participants"], why
    assert why["ready_after_s"] > 0, why
    # every participant bound on this host (the robot's, the gateway's, this test's) was found
    assert why["participants_on_this_host"] is not None, why
    assert why["checks_not_run"] == [], why
    assert why["dds_participants"] >= why["participants_on_this_host"] >= len(ROBOT_NODES) + 1


def test_readiness_is_logged_once(gw: Gateway) -> None:
    gw.wait_for("/health", lambda h: h["ready"], timeout=40)
    assert gw.log_path is not None
    log = Path(gw.log_path).read_text()
    assert log.count("discovery complete:") == 1, log
    assert "DDS participants (" in log and "on this host); ready after" in log
