"""A primary and a robot gateway sharing a component and a function: lifecycle control of the
shared component reaches the robot's apps, answers carry fleet ids, and the shared function's
graph on the primary shows the robot's apps as nodes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "lidar_sensor", "managed_lifecycle", "lifecycle_worker",
               "rpm_sensor", "temp_monitor")
# The primary declares apps `lifecycle` and `worker` of its own (never running), so the
# robot's apps of those ids are `robot2__lifecycle` and `robot2__worker` in the fleet.
PRIMARY = """\
manifest_version: "1.0"
config: {unmanifested_nodes: ignore}
components:
  - id: main-computer
apps:
  - id: engine-temp
    is_located_on: main-computer
    ros_binding: {node_name: temp_sensor}
  - id: lifecycle
    is_located_on: main-computer
    ros_binding: {node_name: not_running}
  - id: worker
    is_located_on: main-computer
    ros_binding: {node_name: not_running_either}
functions:
  - id: sensing
    hosted_by: [engine-temp]
"""
ROBOT = """\
manifest_version: "1.0"
config: {unmanifested_nodes: ignore}
components:
  - id: main-computer
  - id: robot-box
apps:
  - id: lifecycle
    is_located_on: main-computer
    ros_binding: {node_name: managed_lifecycle}
  - id: worker
    is_located_on: robot-box
    ros_binding: {node_name: lifecycle_worker}
  - id: rpm
    is_located_on: robot-box
    ros_binding: {node_name: rpm_sensor}
  - id: monitor
    is_located_on: robot-box
    ros_binding: {node_name: temp_monitor}
  - id: front-lidar
    is_located_on: main-computer
    ros_binding: {node_name: lidar_sensor}
functions:
  - id: sensing
    hosted_by: [front-lidar, rpm, monitor]
"""
FLEET_ID = "robot2__lifecycle"


@dataclass
class Pair:
    primary: Gateway
    robot: Gateway


def hybrid(domain: int, root: Path, name: str, text: str, extra: list[str]) -> Gateway:
    path = root / f"{name}.yaml"
    path.write_text(text)
    settings = ["discovery.mode=hybrid", f"discovery.manifest_path={path}",
                "discovery.refresh_debounce_ms=100", f"state_dir={root / name}",
                "plugins=[graph_provider]", *extra]
    return Gateway(free_port(), domain, settings, root / f"{name}.log").start()


@pytest.fixture(scope="module")
def pair(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("fleet")
    peer = hybrid(domain, root, "robot", ROBOT, [])
    primary: Gateway | None = None
    try:
        primary = hybrid(domain, root, "primary", PRIMARY, [
            "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{peer.port}]",
            "aggregation.peer_names=[robot2]", "aggregation.health_interval_ms=200",
            "aggregation.refresh_interval_ms=200"])
        primary.wait_for("/apps", lambda b: {i["id"]: i["x-vendor"]["is_online"]
                                             for i in b["items"]} == {
            "engine-temp": True, "lifecycle": False, FLEET_ID: True, "front-lidar": True,
            "worker": False, "robot2__worker": True, "rpm": True, "monitor": True},
            timeout=40)
        yield Pair(primary, peer)
    finally:
        if primary is not None:
            primary.stop()
        peer.stop()


def settled(gw: Gateway, app: str) -> dict[str, Any]:
    def done(b: dict[str, Any]) -> bool:
        transition = b["x-vendor"].get("lifecycle", {}).get("transition")
        return transition is None or transition["status"] != "inProgress"

    return gw.wait_for(f"/apps/{app}/status", done, timeout=30)  # type: ignore[no-any-return]


def test_shared_component_status_counts_the_robots_apps(pair: Pair) -> None:
    body = pair.primary.get("/components/main-computer/status").json()
    assert body["status"] == "ready"
    assert body["x-vendor"]["apps_online"] == 3  # engine-temp, robot2__lifecycle, front-lidar
    assert body["x-vendor"]["offline_apps"] == ["lifecycle", "worker"]


def test_restart_of_a_shared_component_reaches_the_robots_apps(pair: Pair) -> None:
    resp = pair.primary.request("PUT", "/components/main-computer/status/restart")
    assert resp.status == 202, resp
    body = resp.json()
    assert body["id"] == "main-computer"
    records = {r["app_id"]: r for r in body["apps"]}
    assert set(records) == {FLEET_ID}  # the robot's managed node, under its fleet id
    assert records[FLEET_ID]["gateway"] == "robot2"
    assert records[FLEET_ID]["steps"][-2:] == ["configure", "activate"]
    skipped = body["x-vendor"]["skipped"]
    assert {"engine-temp: plain node", "lifecycle: offline", "worker: offline"} <= set(skipped)
    assert "robot2__front-lidar: plain node" not in skipped  # the robot names its own
    assert any(s.startswith("front-lidar: plain node") for s in skipped)
    assert settled(pair.robot, "lifecycle")["x-vendor"]["lifecycle"]["transition"][
        "status"] == "completed"


def test_lifecycle_answers_of_a_robot_app_carry_fleet_ids(pair: Pair) -> None:
    settled(pair.robot, "lifecycle")
    resp = pair.primary.request("PUT", f"/apps/{FLEET_ID}/status/restart")
    assert resp.status == 202, resp
    body = resp.json()
    assert body["id"] == FLEET_ID and body["apps"][0]["app_id"] == FLEET_ID
    assert resp.headers["location"] == f"/api/v1/apps/{FLEET_ID}/status"
    status = settled(pair.primary, FLEET_ID)
    assert status["id"] == FLEET_ID
    assert status["x-vendor"]["lifecycle"]["transition"]["app_id"] == FLEET_ID


def test_lifecycle_of_a_robot_component_names_apps_by_fleet_id(pair: Pair) -> None:
    resp = pair.primary.request("PUT", "/components/robot-box/status/start")  # forwarded
    assert resp.status == 202, resp
    body = resp.json()
    assert body["id"] == "robot-box"
    assert [r["app_id"] for r in body["apps"]] == ["robot2__worker"]
    hosts = pair.primary.get("/components/robot-box/hosts").json()
    assert [i["id"] for i in hosts["items"]] == ["robot2__worker", "rpm", "monitor"]


def test_function_graph_of_robot_apps_on_the_primary(pair: Pair) -> None:
    # `sensing` merges the primary's engine-temp and the robot's front-lidar, rpm, monitor
    assert [i["id"] for i in pair.primary.get("/functions/sensing/hosts").json()["items"]] \
        == ["engine-temp", "front-lidar", "rpm", "monitor"]
    doc = pair.primary.get("/functions/sensing/x-vendor-graph").json()["x-vendor-graph"]
    assert doc["nodes"] == [{"entity_id": a, "node_status": "reachable"}
                            for a in ("engine-temp", "front-lidar", "monitor", "rpm")]
    # the robot's edge (its graph): rpm_sensor publishes what temp_monitor subscribes
    topics = {t["topic_id"]: t["name"] for t in doc["topics"]}
    assert len(topics) == len(doc["topics"])  # ids unique after the join
    assert [(e["source"], e["target"], topics[e["topic_id"]]) for e in doc["edges"]
            if e["source"] == "rpm"] == [("rpm", "monitor", "/powertrain/engine/rpm")]
    assert len({e["edge_id"] for e in doc["edges"]}) == len(doc["edges"])
    # asked for alone, the primary's answer has the robot's apps as nodes but not its edges
    alone = pair.primary.get("/functions/sensing/x-vendor-graph",
                             headers={"X-Vendor-No-Fan-Out": "1"}).json()["x-vendor-graph"]
    assert len(alone["nodes"]) == 4 and not any(e["source"] == "rpm" for e in alone["edges"])
