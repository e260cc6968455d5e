"""Logs from /rosout against the demo robot: app, function, component (the log configuration
and the errors are tested in process: tests/logs/test_inproc_logs.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

ROBOT_NODES = ("lidar_sensor", "calibration")
LIDAR = "/apps/lidar_sensor/logs"
ISO_NS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    log = tmp_path_factory.mktemp("gw") / "gateway.log"
    with Gateway(free_port(), domain, ["logs.buffer_size=50"], log) as g:
        g.wait_for("/apps", lambda b: set(ROBOT_NODES) <= {i["id"] for i in b["items"]}, timeout=20)
        # two rounds of the lidar's ERROR/WARN/INFO lines (one every 2 s)
        g.wait_for(LIDAR, lambda b: len(b["items"]) >= 6, timeout=20)
        yield g


def severities(body: dict) -> set[str]:
    return {i["severity"] for i in body["items"]}


def test_lidar_entries_through_the_app(gw: Gateway) -> None:
    body = gw.get(LIDAR).json()
    assert body["x-vendor"]["entity_id"] == "lidar_sensor"
    assert body["x-vendor"]["total_count"] == len(body["items"])
    assert {"error", "warning", "info"} <= severities(body)
    entry = next(i for i in body["items"] if i["severity"] == "error")
    assert entry["message"].startswith("[LIDAR_RANGE_INVALID]")
    assert ISO_NS.match(entry["timestamp"]), entry["timestamp"]
    assert isinstance(entry["id"], str) and entry["id"]
    context = entry["context"]
    assert context["node"] == "/perception/lidar/lidar_sensor"
    assert context["function"] == "check" and context["line"] > 0
    assert context["file"].endswith("nodes.py")
    stamps = [i["timestamp"] for i in body["items"]]
    assert stamps == sorted(stamps)
    # nothing from another node leaks in
    assert all(i["context"]["node"] == "/perception/lidar/lidar_sensor" for i in body["items"])


def test_lidar_entries_through_its_function_and_the_component(gw: Gateway) -> None:
    app_ids = {i["id"] for i in gw.get(LIDAR).json()["items"]}
    func = gw.get("/functions/perception/logs").json()
    assert func["x-vendor"]["entity_id"] == "perception"
    assert app_ids <= {i["id"] for i in func["items"]}
    assert {i["context"]["node"] for i in func["items"]} == {"/perception/lidar/lidar_sensor"}
    host = gw.get("/components").json()["items"][0]["id"]
    comp = gw.get(f"/components/{host}/logs").json()
    assert app_ids <= {i["id"] for i in comp["items"]}
    # calibration logs only when called: call it and find its line on its app and function
    resp = gw.request("POST", "/apps/calibration/operations/calibrate/executions", {})
    assert resp.status == 200
    body = gw.wait_for("/apps/calibration/logs", lambda b: len(b["items"]) >= 1)
    assert body["items"][-1]["message"] == "engine calibrated with offset 0.0"
    assert body["items"][-1]["severity"] == "info"
    powertrain = gw.get("/functions/powertrain/logs").json()
    assert {i["context"]["node"] for i in powertrain["items"]} == \
        {"/powertrain/engine/calibration"}
