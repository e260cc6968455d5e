"""Freeze frames chosen by config, default topics and entity default; startup capture; retain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from std_msgs.msg import String

from gateway.demo.robot import Robot
from gateway.faults.reporter import FaultReporter
from tests.conftest import free_port
from tests.harness import Gateway
from tests.integration.test_faults_support import RosSide, wait_until, write_yaml

pytestmark = pytest.mark.integration

TEMPERATURE = "/powertrain/engine/temperature"
SCAN = "/perception/lidar/scan"
STATE = "/snap/pub/state"
CONFIG = f"""
fault_specific:
  SNAP_EXACT: [{TEMPERATURE}]
patterns:
  "SNAP_PAT_.*": [{SCAN}]
  "SNAP_.*": [{STATE}, {TEMPERATURE}]
"""


ROBOT_NODES = ("temp_sensor", "lidar_sensor")
@pytest.fixture(scope="module")
def reporter(ros: RosSide) -> FaultReporter:
    node = ros.node("pub", "/snap")
    pub = node.create_publisher(String, STATE, 10)
    node.create_timer(0.2, lambda: pub.publish(String(data="ok")))
    return ros.reporter(node)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("snap")


def start(domain: int, tmp: Path, name: str, settings: list[str]) -> Gateway:
    gw = Gateway(free_port(), domain, ["discovery.refresh_debounce_ms=100",
                                       "snapshots.timeout_sec=3", *settings],
                 tmp / f"{name}.log")
    return gw.start()


def frames(gw: Gateway, app: str, code: str, want: int = 1) -> list[dict[str, Any]]:
    """Snapshots of a fault once at least `want` frames are there."""
    def get() -> list[dict[str, Any]] | None:
        resp = gw.get(f"/apps/{app}/faults/{code}")
        if resp.status != 200:
            return None
        snaps = resp.json()["environment_data"]["snapshots"]
        return snaps if len(snaps) >= want else None
    return wait_until(get, 20, f"{want} frame(s) of {code}")  # type: ignore[no-any-return]


def topics(snaps: list[dict[str, Any]]) -> list[str]:
    return sorted(s["x-vendor"]["topic"] for s in snaps)


def test_frames_captured_at_startup_for_confirmed_faults(robot: Robot, domain: int,
                                                         tmp: Path) -> None:
    state = tmp / "state"
    gw = start(domain, tmp, "nocapture", [f"state_dir={state}", "snapshots.enabled=false"])
    try:
        wait_until(lambda: gw.get("/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID").status == 200,
                   30, "lidar fault")
        detail = gw.get("/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID").json()
        assert detail["environment_data"]["snapshots"] == []
    finally:
        gw.stop()
    gw = start(domain, tmp, "startup", [f"state_dir={state}"])
    try:
        (frame,) = frames(gw, "lidar_sensor", "LIDAR_RANGE_INVALID")
        assert frame["name"] == SCAN and frame["type"] == "freeze_frame"
        assert frame["x-vendor"]["capture_origin"] == "startup"
        assert frame["x-vendor"]["captured_at"].endswith("Z")
    finally:
        gw.stop()


def test_topics_chosen_by_config_file(robot: Robot, domain: int, tmp: Path,
                                      reporter: FaultReporter) -> None:
    config = write_yaml(tmp / "snapshots.yaml", CONFIG)
    gw = start(domain, tmp, "config", [f"state_dir={tmp / 'state2'}",
                                       f"snapshots.config_file={config}"])
    try:
        wait_until(lambda: gw.get("/apps/pub").status == 200, 20, "pub app")
        for code in ("SNAP_EXACT", "SNAP_PAT_1", "SNAP_OTHER", "OWN_DEFAULT"):
            reporter.report(code, 2, "snapshot test")
        exact = frames(gw, "pub", "SNAP_EXACT")
        assert topics(exact) == [TEMPERATURE]  # exact code first
        assert exact[0]["x-vendor"]["message_type"] == "sensor_msgs/msg/Temperature"
        assert 85.0 <= exact[0]["data"]["temperature"] <= 95.0
        assert topics(frames(gw, "pub", "SNAP_PAT_1")) == [SCAN]  # first matching pattern
        other = frames(gw, "pub", "SNAP_OTHER", want=2)
        assert topics(other) == sorted([STATE, TEMPERATURE])  # second pattern
        own = frames(gw, "pub", "OWN_DEFAULT")
        # entity default: the node's own topics, without /rosout, /parameter_events and
        # the fault transport
        assert topics(own) == [STATE]
        assert own[0]["data"] == "ok" and own[0]["x-vendor"]["full_data"] == {"data": "ok"}
        assert "capture_origin" not in own[0]["x-vendor"]
        # a clear deletes the frames (retain_on_clear is off)
        assert gw.request("DELETE", "/apps/pub/faults/SNAP_EXACT").status == 204
        assert gw.get("/apps/pub/faults/SNAP_EXACT").json()["environment_data"][
            "snapshots"] == []
    finally:
        gw.stop()


def test_default_topics_and_retain_on_clear(robot: Robot, domain: int, tmp: Path,
                                            reporter: FaultReporter) -> None:
    gw = start(domain, tmp, "defaults", [f"state_dir={tmp / 'state3'}",
                                         f"snapshots.default_topics=[{TEMPERATURE}]",
                                         "snapshots.retain_on_clear=true"])
    try:
        wait_until(lambda: gw.get("/apps/pub").status == 200, 20, "pub app")
        reporter.report("DEFAULT_ONE", 2, "snapshot test")
        assert topics(frames(gw, "pub", "DEFAULT_ONE")) == [TEMPERATURE]
        assert gw.request("DELETE", "/apps/pub/faults/DEFAULT_ONE").status == 204
        detail = gw.get("/apps/pub/faults/DEFAULT_ONE").json()
        assert detail["x-vendor"]["status"] == "CLEARED"
        assert topics(detail["environment_data"]["snapshots"]) == [TEMPERATURE]
    finally:
        gw.stop()
