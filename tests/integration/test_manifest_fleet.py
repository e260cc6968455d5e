"""Two hybrid gateways whose manifests overlap: areas and components merge by id, and a
silent peer's manifest entities stay listed with `available: false`."""

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

ROBOT_NODES = ("temp_sensor", "lidar_sensor")
PRIMARY = """\
manifest_version: "1.0"
config: {unmanifested_nodes: ignore}
areas:
  - id: powertrain
  - id: chassis
components:
  - id: engine-ecu
    area: powertrain
  - id: gateway-box
    area: chassis
    identity: {manufacturer: Acme, serial_number: GB-1}
apps:
  - id: engine-temp
    is_located_on: engine-ecu
    ros_binding: {node_name: temp_sensor}
"""
PEER = """\
manifest_version: "1.0"
config: {unmanifested_nodes: ignore}
areas:
  - id: chassis
  - id: perception
components:
  - id: gateway-box
    area: chassis
    identity: {manufacturer: Other, firmware_version: "7.1"}
  - id: lidar-box
    area: perception
    identity: {manufacturer: Ouster, model: OS1}
apps:
  - id: front-lidar
    is_located_on: lidar-box
    ros_binding: {node_name: lidar_sensor}
"""


@dataclass
class Pair:
    primary: Gateway
    peer: Gateway


def hybrid(domain: int, root: Path, name: str, text: str, extra: list[str]) -> Gateway:
    path = root / f"{name}.yaml"
    path.write_text(text)
    settings = ["discovery.mode=hybrid", f"discovery.manifest_path={path}",
                "discovery.refresh_debounce_ms=100", f"state_dir={root / name}", *extra]
    return Gateway(free_port(), domain, settings, root / f"{name}.log").start()


@pytest.fixture(scope="module")
def pair(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("fleet")
    peer = hybrid(domain, root, "peer", PEER, [])
    primary: Gateway | None = None
    try:
        primary = hybrid(domain, root, "primary", PRIMARY, [
            "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{peer.port}]",
            "aggregation.peer_names=[robot2]", "aggregation.health_interval_ms=200",
            "aggregation.refresh_interval_ms=200"])
        primary.wait_for("/apps", lambda b: {i["id"] for i in b["items"]} == {
            "engine-temp", "front-lidar"} and all(i["x-vendor"]["is_online"]
                                                  for i in b["items"]), timeout=40)
        yield Pair(primary, peer)
    finally:
        if primary is not None:
            primary.stop()
        peer.stop()


def by_id(gw: Gateway, path: str) -> dict[str, Any]:
    return {i["id"]: i for i in gw.get(path).json()["items"]}


def test_areas_and_components_merge_by_id(pair: Pair) -> None:
    areas = by_id(pair.primary, "/areas")
    assert list(areas) == ["powertrain", "chassis", "perception"]
    assert areas["chassis"]["x-vendor"]["contributors"] == ["local", "robot2"]
    assert areas["perception"]["x-vendor"]["contributors"] == ["robot2"]
    assert areas["powertrain"]["x-vendor"]["contributors"] == ["local"]
    comps = by_id(pair.primary, "/components")
    assert list(comps) == ["engine-ecu", "gateway-box", "lidar-box"]
    assert comps["gateway-box"]["x-vendor"]["contributors"] == ["local", "robot2"]
    assert all(c["x-vendor"]["source"] == "manifest" for c in comps.values())
    # nameplates merge per field: the first contributor's fields stay, gaps are filled
    box = pair.primary.get("/components/gateway-box").json()["x-vendor"]["identity"]
    assert box["manufacturer"] == "Acme" and box["serialNumber"] == "GB-1"
    assert box["firmwareVersion"] == "7.1"
    assert box["_provenance"] == {"manufacturer": "manifest", "serial_number": "manifest",
                                  "firmware_version": "manifest"}
    lidar = pair.primary.get("/components/lidar-box").json()
    assert lidar["x-vendor"]["identity"]["manufacturer"] == "Ouster"
    assert lidar["_links"]["area"] == "/api/v1/areas/perception"
    assert [i["id"] for i in pair.primary.get("/areas/chassis/contains").json()["items"]] == [
        "gateway-box"]


def test_peer_apps_keep_their_relationships(pair: Pair) -> None:
    belongs = pair.primary.get("/apps/front-lidar/belongs-to").json()
    assert [i["id"] for i in belongs["items"]] == ["perception"]
    located = pair.primary.get("/apps/front-lidar/is-located-on").json()
    assert [i["id"] for i in located["items"]] == ["lidar-box"]
    data = pair.primary.get("/areas/perception/data").json()
    assert any(i["id"].startswith("/perception/lidar/") for i in data["items"]), data


def test_a_silent_peers_manifest_entities_stay_unavailable(pair: Pair) -> None:
    pair.peer.stop()
    pair.primary.wait_for("/areas", lambda b: any(
        i["x-vendor"].get("available") is False for i in b["items"]), timeout=30)
    areas = by_id(pair.primary, "/areas")
    assert areas["perception"]["x-vendor"]["available"] is False
    assert "available" not in areas["chassis"]["x-vendor"]  # this gateway still contributes it
    comps = by_id(pair.primary, "/components")
    assert comps["lidar-box"]["x-vendor"]["available"] is False
    assert "available" not in comps["gateway-box"]["x-vendor"]
    apps = by_id(pair.primary, "/apps")
    assert apps["front-lidar"]["x-vendor"]["available"] is False
    assert "available" not in apps["engine-temp"]["x-vendor"]
