"""A partitioned robot degrades, never vanishes: seen offline by the primary that dials it and
by the primary it dials out to, its apps `is_online: false` and `available: false` alike, and
back online after the partition heals.

One robot gateway (SIGSTOP is the partition) is a static peer of `dialer` and connects out
to `hub` (aggregation.connect_to). On `hub` the robot's tunnel closes during the partition
(WebSocket heartbeat): the robot stays listed offline with its apps (aggregation.connect_hold_ms)
and takes its name again when it reconnects.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from gateway.federation.connect_auth import robot_token
from tests.conftest import free_port
from tests.domains import next_domain
from tests.harness import Gateway, wait_until

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor",)
SECRET = "fleet-partition-secret-" + str(os.getpid())
ROBOT_KEY = "fleet-partition-robot-key-" + str(os.getpid())  # issues robots' own tokens
APP = "temp_sensor"


class Fleet(NamedTuple):
    dialer: Gateway
    hub: Gateway
    robot: Gateway


@pytest.fixture(scope="module")
def fleet(robot: Any, domain: int, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Fleet]:
    logs: Path = tmp_path_factory.mktemp("partition")
    hub = Gateway(free_port(), next_domain(), [
        f"state_dir={logs / 'hub'}", "aggregation.enabled=true",
        f"aggregation.connect_token={SECRET}",
        f"aggregation.connect_robot_secret={ROBOT_KEY}"], logs / "hub.log")
    robot_gw = Gateway(free_port(), domain, [
        f"state_dir={logs / 'robot'}", "aggregation.mdns_name=robot1",
        f"aggregation.connect_to=http://127.0.0.1:{hub.port}",
        f"aggregation.connect_robot_token={robot_token(ROBOT_KEY, 'robot1')}"],
        logs / "robot1.log")
    dialer = Gateway(free_port(), next_domain(), [
        f"state_dir={logs / 'dialer'}", "aggregation.enabled=true",
        f"aggregation.peer_urls=[http://127.0.0.1:{robot_gw.port}]",
        "aggregation.peer_names=[robot1]"], logs / "dialer.log")
    with hub, robot_gw, dialer:
        yield Fleet(dialer, hub, robot_gw)


def peer(gw: Gateway) -> dict[str, Any] | None:
    return next((p for p in gw.get("/health").json()["peers"] if p["name"] == "robot1"), None)


def app(gw: Gateway) -> dict[str, Any] | None:
    return next((a for a in gw.get("/apps").json()["items"] if a["id"] == APP), None)


def consistent(gw: Gateway) -> None:
    """No app of the fleet view says online while its gateway is unavailable."""
    for item in gw.get("/apps").json()["items"]:
        xv = item["x-vendor"]
        assert not (xv["is_online"] and xv.get("available") is False), item
    detail = gw.get(f"/apps/{APP}")
    if detail.status == 200:
        xv = detail.json()["x-vendor"]
        assert not (xv.get("is_online") and xv.get("available") is False), detail


def online(gw: Gateway) -> bool:
    p, a = peer(gw), app(gw)
    return bool(p and p["status"] == "online" and a and a["x-vendor"]["is_online"]
                and "available" not in a["x-vendor"])


def offline_listed(gw: Gateway) -> dict[str, Any] | None:
    """The robot listed offline (peer and app) on a primary, else None."""
    consistent(gw)
    p, a = peer(gw), app(gw)
    if p is None or a is None or p["status"] != "offline":
        return None
    if a["x-vendor"]["is_online"] or a["x-vendor"].get("available") is not False:
        return None
    return p


def test_partitioned_robot_stays_listed_offline_then_returns(fleet: Fleet) -> None:
    for gw in (fleet.dialer, fleet.hub):
        wait_until(lambda gw=gw: online(gw), 90, f"robot1 online on {gw.port}")
    proc = fleet.robot.proc
    assert proc is not None
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        for gw in (fleet.dialer, fleet.hub):
            wait_until(lambda gw=gw: offline_listed(gw), 60, f"robot1 offline on {gw.port}")
        # the hub closes the silent tunnel (heartbeat): the robot stays listed, held
        held = wait_until(lambda: (offline_listed(fleet.hub) or {}).get("x-vendor", {})
                          .get("tunnel") == "closed" and offline_listed(fleet.hub), 90,
                          "robot1's tunnel closed on the hub, the robot still listed")
        assert held["x-vendor"]["held_until"].endswith("Z"), held
        # its name is kept for it: the shared token cannot take it meanwhile
        taken = fleet.hub.get("/x-vendor-connect?name=robot1",
                              headers={"X-Vendor-Connect-Token": SECRET})
        assert taken.status == 409 and "robot1" in taken.json()["message"], taken
        assert offline_listed(fleet.dialer)
        # its apps' reads: the robot is named as failed, never silently missing
        body = fleet.hub.get(f"/apps/{APP}/data")
        assert body.status == 504, body
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    for gw in (fleet.dialer, fleet.hub):
        wait_until(lambda gw=gw: online(gw), 90, f"robot1 online again on {gw.port}")
        consistent(gw)
    p = peer(fleet.hub)
    assert p is not None and "tunnel" not in p["x-vendor"], p
    assert fleet.hub.get(f"/apps/{APP}/data").json()["items"]
