"""The demo robot behind the shipped manifest: hybrid and manifest_only modes, relationships,
nameplates, area aggregation, status and health; invalid manifests stop `run`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import NODES, Robot, ros_env
from tests.conftest import free_port
from tests.harness import Gateway, assert_error

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "demo_manifest.yaml"
CSV = ROOT / "deploy" / "demo_inventory.csv"
AREAS = {"powertrain", "chassis", "body", "perception"}  # top level (subareas are nested)
# the demo nodes the shipped manifest binds (the robot may run more: unmanifested in hybrid),
# with the component hosting each and the namespace of its node
HOSTED = {"temp_sensor": ("engine-sensor-board", "/powertrain/engine"),
          "temp_monitor": ("engine-ecu", "/powertrain/engine"),
          "rpm_sensor": ("engine-sensor-board", "/powertrain/engine"),
          "pressure_sensor": ("brake-ecu", "/chassis/brakes"),
          "status_sensor": ("door-module-fl", "/body/door/front_left"),
          "lidar_sensor": ("perception-computer", "/perception/lidar"),
          "actuator": ("brake-ecu", "/chassis/brakes"),
          "controller": ("light-module", "/body/lights"),
          "calibration": ("engine-ecu", "/powertrain/engine"),
          "long_calibration": ("engine-ecu", "/powertrain/engine"),
          "managed_lifecycle": ("main-computer", "/"),
          "unresponsive_param": ("main-computer", "/")}
BOUND = tuple(HOSTED)


def start(domain: int, tmp: Path, name: str, mode: str) -> Gateway:
    settings = [f"discovery.mode={mode}", f"discovery.manifest_path={MANIFEST}",
                f"discovery.inventory.csv_path={CSV}", "discovery.refresh_debounce_ms=100",
                f"state_dir={tmp / name}", "topic_sample_timeout_sec=3.0"]
    return Gateway(free_port(), domain, settings, tmp / f"{name}.log").start()


@pytest.fixture(scope="module")
def hybrid(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Gateway]:
    gw = start(domain, tmp_path_factory.mktemp("hybrid"), "hybrid", "hybrid")
    try:
        gw.wait_for("/apps", lambda b: sum(i["x-vendor"]["is_online"] for i in b["items"])
                    >= len(NODES), timeout=40)
        yield gw
    finally:
        gw.stop()


@pytest.fixture(scope="module")
def manifest_only(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[Gateway]:
    gw = start(domain, tmp_path_factory.mktemp("monly"), "monly", "manifest_only")
    try:
        yield gw
    finally:
        gw.stop()


def ids(body: dict) -> list[str]:
    return [item["id"] for item in body["items"]]


def test_hybrid_links_the_twelve_demo_nodes(hybrid: Gateway) -> None:
    items = {i["id"]: i for i in hybrid.get("/apps").json()["items"]}
    assert set(BOUND) <= set(items)
    for node, (component, ns) in HOSTED.items():
        fqn = f"{ns.rstrip('/')}/{node}"
        assert items[node]["x-vendor"] == {"source": "manifest", "is_online": True,
                                           "component_id": component,
                                           "ros2": {"node": fqn, "namespace": ns}}, node
    # a manifest app without a running node: its component, no ros2 block
    assert items["tire_pressure_monitor"]["x-vendor"] == {"source": "manifest",
                                                          "is_online": False,
                                                          "component_id": "brake-ecu"}
    # nodes the manifest does not declare (policy warn) are heuristic apps
    assert all(i["x-vendor"]["source"] == "heuristic" for k, i in items.items()
               if k not in BOUND and k != "tire_pressure_monitor")
    temp = hybrid.get("/apps/temp_sensor").json()
    assert temp["name"] == "Engine temperature sensor"
    assert temp["x-vendor"]["ros2"]["node"] == "/powertrain/engine/temp_sensor"
    assert temp["x-vendor"]["component_id"] == "engine-sensor-board"
    offline = hybrid.get("/apps/tire_pressure_monitor").json()
    assert offline["x-vendor"]["is_online"] is False and "ros2" not in offline["x-vendor"]
    assert hybrid.get("/apps/tire_pressure_monitor/data").json()["items"] == []


def test_areas_subareas_and_contained_components(hybrid: Gateway) -> None:
    assert set(ids(hybrid.get("/areas").json())) == AREAS
    assert ids(hybrid.get("/areas/body/subareas").json()) == ["doors", "lights"]
    doors = hybrid.get("/areas/body/subareas/doors").json()
    assert doors["type"] == "area" and doors["_links"]["parent"] == "/api/v1/areas/body"
    assert_error(hybrid.get("/areas/body/subareas/engine"), 404, "resource-not-found")
    contains = hybrid.get("/areas/engine/contains").json()
    assert ids(contains) == ["engine-ecu", "engine-sensor-board", "coolant-pump"]
    assert contains["_links"]["self"] == "/api/v1/areas/engine/contains"
    assert ids(hybrid.get("/areas/engine/components").json()) == ids(contains)
    caps = {c["name"] for c in hybrid.get("/areas/powertrain").json()["capabilities"]}
    assert {"subareas", "contains", "components", "data", "faults", "logs"} <= caps
    assert not {"locks", "scripts", "hosts"} & caps


def test_components_subcomponents_dependencies_and_hosts(hybrid: Gateway) -> None:
    assert ids(hybrid.get("/components/body-ecu/subcomponents").json()) == [
        "door-module-fl", "light-module"]
    light = hybrid.get("/components/body-ecu/subcomponents/light-module").json()
    assert light["_links"] == {"self": "/api/v1/components/light-module",
                               "collection": "/api/v1/components",
                               "area": "/api/v1/areas/lights",
                               "parent": "/api/v1/components/body-ecu"}
    deps = hybrid.get("/components/brake-ecu/depends-on").json()
    assert ids(deps) == ["engine-ecu"] and "missing" not in deps["items"][0]["x-vendor"]
    assert ids(hybrid.get("/components/engine-ecu/hosts").json()) == [
        "temp_monitor", "calibration", "long_calibration"]
    assert ids(hybrid.get("/components/brake-ecu/hosts").json()) == [
        "pressure_sensor", "actuator", "tire_pressure_monitor"]
    funcs = {i["id"]: i for i in hybrid.get("/functions").json()["items"]}
    assert list(funcs) == ["engine-monitoring", "braking", "environment-sensing",
                           "body-control"]
    assert funcs["braking"]["x-vendor"]["source"] == "manifest"
    assert hybrid.get("/functions/braking").json()["name"] == "Braking"
    assert ids(hybrid.get("/functions/braking/hosts").json()) == [
        "pressure_sensor", "actuator", "tire_pressure_monitor"]
    caps = {c["name"] for c in hybrid.get("/components/engine-ecu").json()["capabilities"]}
    assert {"hosts", "depends-on", "subcomponents", "data"} <= caps


def test_app_relationships(hybrid: Gateway) -> None:
    located = hybrid.get("/apps/temp_sensor/is-located-on").json()
    assert ids(located) == ["engine-sensor-board"]
    assert located["_links"] == {"self": "/api/v1/apps/temp_sensor/is-located-on",
                                 "app": "/api/v1/apps/temp_sensor"}
    assert located["x-vendor"]["total_count"] == 1
    assert ids(hybrid.get("/apps/temp_sensor/belongs-to").json()) == ["engine"]
    assert ids(hybrid.get("/apps/status_sensor/belongs-to").json()) == ["doors"]
    # main-computer has no area: 0 items
    assert hybrid.get("/apps/managed_lifecycle/belongs-to").json()["items"] == []
    assert ids(hybrid.get("/apps/managed_lifecycle/is-located-on").json()) == ["main-computer"]
    body = assert_error(hybrid.get("/apps/no_such_app/belongs-to"), 404, "resource-not-found")
    assert body["parameters"]["app_id"] == "no_such_app"


def test_nameplates_with_provenance(hybrid: Gateway) -> None:
    brake = hybrid.get("/components/brake-ecu").json()
    assert brake["x-vendor"]["source"] == "manifest"
    ident = brake["x-vendor"]["identity"]
    assert ident["manufacturer"] == "Continental" and ident["serialNumber"] == "ECU-BR-1107"
    assert ident["extra"] == {"rack": "R3"}  # filled from the inventory CSV
    assert ident["_provenance"]["serial_number"] == "manifest"
    assert ident["_provenance"]["extra.rack"] == "inventory"
    pump = hybrid.get("/components/coolant-pump").json()
    assert pump["name"] == "Grundfos CR-5" and pump["x-vendor"]["source"] == "inventory"
    assert pump["x-vendor"]["identity"]["serialNumber"] == "GP-2214"
    assert pump["x-vendor"]["identity"]["_provenance"]["firmware_version"] == "inventory"
    comps = {i["id"]: i for i in hybrid.get("/components").json()["items"]}
    assert comps["lidar-unit"]["x-vendor"]["source"] == "inventory"


def test_area_aggregates_data_and_faults_of_its_descendants(hybrid: Gateway) -> None:
    data = hybrid.get("/areas/powertrain/data").json()
    topics = {i["id"]: i for i in data["items"]}
    assert "/powertrain/engine/temperature" in topics
    assert "temp_sensor" in topics["/powertrain/engine/temperature"]["x-vendor"]["member_ids"]
    members = {m for i in data["items"] for m in i["x-vendor"]["member_ids"]}
    assert members <= {"temp_sensor", "temp_monitor", "rpm_sensor", "calibration",
                       "long_calibration"}
    assert not any(t.startswith("/perception") for t in topics)
    ops = hybrid.get("/areas/powertrain/operations").json()["items"]
    assert {m for o in ops for m in o["x-vendor"]["member_ids"]} >= {"calibration"}
    assert not any(m == "actuator" for o in ops for m in o["x-vendor"]["member_ids"])
    params = hybrid.get("/areas/engine/configurations").json()["items"]
    assert {p["id"].partition(":")[0] for p in params} <= {
        "temp_sensor", "temp_monitor", "rpm_sensor", "calibration", "long_calibration"}
    assert any(p["id"].startswith("temp_sensor:") for p in params)
    # the lidar reports faults every 2 s; they show on its area, not on the others
    faults = hybrid.wait_for("/areas/perception/faults", lambda b: any(
        f["fault_code"].startswith("LIDAR") for f in b["items"]), timeout=30)
    assert faults["x-vendor"]["entity_id"] == "perception"
    assert not any(f["fault_code"].startswith("LIDAR")
                   for f in hybrid.get("/areas/powertrain/faults").json()["items"])
    logs = hybrid.wait_for("/areas/perception/logs", lambda b: b["items"], timeout=30)
    assert {e["context"]["node"] for e in logs["items"]} == {"/perception/lidar/lidar_sensor"}


def test_manifest_status_and_health(hybrid: Gateway) -> None:
    status = hybrid.get("/manifest/status").json()
    assert status["active"] is True and status["path"] == str(MANIFEST)
    assert status["manifest_version"] == "1.0"
    assert status["metadata"]["name"] == "demo-vehicle"
    assert status["entity_counts"] == {"areas": 8, "components": 12, "apps": 13,
                                       "functions": 4, "scripts": 0}
    assert status["validation"]["is_valid"] is True
    assert status["inventory"]["skipped_rows"] == []
    disc = hybrid.get("/health").json()["discovery"]
    assert disc["mode"] == "hybrid"
    assert disc["pipeline"]["layers"] == ["manifest", "runtime"]
    assert disc["pipeline"]["total_entities"] >= 37
    linking = disc["linking"]
    assert linking["linked_count"] == len(BOUND)
    assert linking["binding_conflicts"] == 0 and linking["unmanifested_policy"] == "warn"


def test_manifest_only_serves_declared_entities(manifest_only: Gateway) -> None:
    items = manifest_only.get("/apps").json()["items"]
    assert {i["id"] for i in items} == {*BOUND, "tire_pressure_monitor"}
    assert not any(i["x-vendor"]["is_online"] for i in items)
    assert "ros2" not in manifest_only.get("/apps/temp_sensor").json()["x-vendor"]
    assert set(ids(manifest_only.get("/areas").json())) == AREAS
    assert ids(manifest_only.get("/components/engine-ecu/hosts").json()) == [
        "temp_monitor", "calibration", "long_calibration"]
    disc = manifest_only.get("/health").json()["discovery"]
    assert disc["mode"] == "manifest_only" and "linking" not in disc
    assert disc["pipeline"]["layers"] == ["manifest"]
    assert manifest_only.get("/manifest/status").json()["entity_counts"]["apps"] == 13


BASE = """\
manifest_version: "1.0"
areas:
  - id: a1
components:
  - id: c1
    area: a1
apps:
  - id: app1
    is_located_on: c1
    ros_binding: {node_name: n1, namespace: /x}
functions:
  - id: f1
    hosted_by: [app1]
"""
INVALID = {
    "R001": BASE.replace('"1.0"', '"0.9"'),
    "R002": BASE.replace("  - id: a1\n", "  - id: a1\n  - id: a1\n"),
    "R003": BASE.replace("components:\n", "components:\n  - id: c1\n"),
    "R004": BASE.replace("apps:\n", "apps:\n  - id: app1\n"),
    "R005": BASE.replace("functions:\n", "functions:\n  - id: f1\n"),
    "R006": BASE.replace("    area: a1\n", "    area: nowhere\n"),
    "R007": BASE.replace("is_located_on: c1", "is_located_on: ghost"),
    "R008": BASE.replace("apps:\n", "apps:\n  - id: app2\n    depends_on: [ghost]\n"),
    "R009": BASE.replace("hosted_by: [app1]", "hosted_by: [ghost]"),
    "R010": BASE.replace("apps:\n", "apps:\n  - id: app2\n    ros_binding: {node_name: n1, "
                         "namespace: /x}\n"),
    "R011": BASE.replace("apps:\n", "apps:\n  - {id: p, depends_on: [q]}\n"
                         "  - {id: q, depends_on: [p]}\n"),
    "R012": BASE + "scripts:\n  - {id: app1, path: /x.sh, format: sh}\n",
    "R013": BASE.replace("apps:\n", "apps:\n  - id: app2\n    external: true\n"
                         "    ros_binding: {node_name: n2}\n"),
    "LOAD": BASE.replace("  - id: f1\n", "  - id: f1: x\n"),
    "INVENTORY_CSV": BASE,
}
ENTITY = {"R002": "a1", "R003": "c1", "R004": "app1", "R005": "f1", "R006": "c1",
          "R007": "app1", "R008": "app2", "R009": "f1", "R010": "app2", "R011": "p",
          "R012": "app1", "R013": "app2"}


def test_an_invalid_manifest_of_each_rule_stops_run(tmp_path: Path, domain: int) -> None:
    env = ros_env(domain)
    procs = {}
    for rule, text in INVALID.items():
        path = tmp_path / f"{rule}.yaml"
        path.write_text(text)
        cmd = [sys.executable, "-m", "gateway", "run", "--port", str(free_port()),
               "--domain", str(domain), "--set", "discovery.mode=hybrid",
               "--set", f"discovery.manifest_path={path}", "--set", f"state_dir={tmp_path}/s"]
        if rule == "INVENTORY_CSV":
            (tmp_path / "inv.csv").write_text("name,model\nx,y\n")  # no id column
            cmd += ["--set", f"discovery.inventory.csv_path={tmp_path / 'inv.csv'}"]
        procs[rule] = (path, subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE))
    for rule, (path, proc) in procs.items():
        out, err = proc.communicate(timeout=60)
        text = err.decode()
        assert proc.returncode == 2, (rule, text)
        assert "configuration error: invalid manifest" in text, text
        assert f"[{rule}]" in text, (rule, text)
        if rule in ENTITY:
            assert f"'{ENTITY[rule]}'" in text, (rule, text)
            assert f"(at {path}:" in text, (rule, text)  # the file and the line
        if rule == "LOAD":
            assert f"{path}:12" in text and "not valid YAML" in text, text
        assert b"serving" not in out + err  # nothing served, not even half of it
