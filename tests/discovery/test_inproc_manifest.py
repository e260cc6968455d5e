"""Manifest discovery in process: the fake demo robot behind the shipped manifest (hybrid and
manifest_only), its relationships, nameplates, area aggregation, /manifest/status and the
health `discovery` block, the function graph and lifecycle over it, and the errors of both
profiles over a loaded manifest."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gateway.discovery.manifest import ManifestError
from gateway.faults.model import CRITICAL, Report
from gateway.wire.docs import camel_case
from tests.inproc.inproc_demo import DEMO_MANIFEST, TEMPERATURE_TOPIC, demo_nodes, run_demo
from tests.inproc.inproc_gateway import Gw, Runner, Scenario, run_gateway
from tests.inproc.inproc_robot import FakeNode

API = "/api/v1"
AREAS = {"powertrain", "chassis", "body", "perception"}  # top level (subareas are nested)
# the demo nodes the shipped manifest binds, with the component hosting each and its namespace
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
LIDAR = "/perception/lidar/lidar_sensor"
NOT_FOUND = {"spec": "resource-not-found", "medkit": "entity-not-found"}  # an unknown entity


def demo(gateway: Runner, scenario: Scenario, mode: str = "hybrid",
         settings: tuple[str, ...] = ()) -> None:
    run_demo(gateway, scenario, settings, mode)


async def get(gw: Gw, path: str) -> Any:
    status, body = await gw.json("GET", f"{API}{path}")
    assert status == 200, (path, status, body)
    return body


def ids(body: dict[str, Any]) -> list[str]:
    return [item["id"] for item in body["items"]]


def test_hybrid_links_the_twelve_demo_nodes(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        items = {i["id"]: i for i in (await get(gw, "/apps"))["items"]}
        assert set(BOUND) <= set(items)
        for node, (component, ns) in HOSTED.items():
            fqn = f"{ns.rstrip('/')}/{node}"
            assert items[node][gw.xv] == {"source": "manifest", "is_online": True,
                                          "component_id": component,
                                          "ros2": {"node": fqn, "namespace": ns}}, node
        # a manifest app without a running node: its component, no ros2 block
        assert items["tire_pressure_monitor"][gw.xv] == {"source": "manifest",
                                                         "is_online": False,
                                                         "component_id": "brake-ecu"}
        assert set(items) == {*BOUND, "tire_pressure_monitor"}
        temp = await get(gw, "/apps/temp_sensor")
        assert temp["name"] == "Engine temperature sensor"
        assert temp[gw.xv]["ros2"]["node"] == "/powertrain/engine/temp_sensor"
        assert temp[gw.xv]["component_id"] == "engine-sensor-board"
        offline = await get(gw, "/apps/tire_pressure_monitor")
        assert offline[gw.xv]["is_online"] is False and "ros2" not in offline[gw.xv]
        assert (await get(gw, "/apps/tire_pressure_monitor/data"))["items"] == []

    demo(gateway, scenario)


def test_an_unmanifested_node_is_a_heuristic_app(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        items = {i["id"]: i for i in (await get(gw, "/apps"))["items"]}
        extra = [i for k, i in items.items() if k not in BOUND and k != "tire_pressure_monitor"]
        assert [i["name"] for i in extra] == ["stray"]  # policy warn: kept, as a heuristic app
        assert extra[0][gw.xv]["source"] == "heuristic"
        linking = (await get(gw, "/health"))["discovery"]["linking"]
        assert linking["linked_count"] == len(BOUND)

    run_demo(gateway, scenario, nodes=[*demo_nodes(), FakeNode("stray", "/lab")])


def test_areas_subareas_and_contained_components(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        assert set(ids(await get(gw, "/areas"))) == AREAS
        assert ids(await get(gw, "/areas/body/subareas")) == ["doors", "lights"]
        doors = await get(gw, "/areas/body/subareas/doors")
        assert doors["type"] == "area" and doors["_links"]["parent"] == f"{API}/areas/body"
        body = await gw.error("GET", f"{API}/areas/body/subareas/engine", 404)
        assert body["error_code"] == NOT_FOUND[gw.profile]
        contains = await get(gw, "/areas/engine/contains")
        assert ids(contains) == ["engine-ecu", "engine-sensor-board", "coolant-pump"]
        assert contains["_links"]["self"] == f"{API}/areas/engine/contains"
        assert ids(await get(gw, "/areas/engine/components")) == ids(contains)
        caps = {c["name"] for c in (await get(gw, "/areas/powertrain"))["capabilities"]}
        assert {"subareas", "contains", "components", "data", "faults", "logs"} <= caps
        assert not {"locks", "scripts", "hosts"} & caps

    demo(gateway, scenario)


def test_components_subcomponents_dependencies_and_hosts(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        assert ids(await get(gw, "/components/body-ecu/subcomponents")) == [
            "door-module-fl", "light-module"]
        light = await get(gw, "/components/body-ecu/subcomponents/light-module")
        assert light["_links"] == {"self": f"{API}/components/light-module",
                                   "collection": f"{API}/components",
                                   "area": f"{API}/areas/lights",
                                   "parent": f"{API}/components/body-ecu"}
        deps = await get(gw, "/components/brake-ecu/depends-on")
        assert ids(deps) == ["engine-ecu"] and "missing" not in deps["items"][0][gw.xv]
        assert ids(await get(gw, "/components/engine-ecu/hosts")) == [
            "temp_monitor", "calibration", "long_calibration"]
        assert ids(await get(gw, "/components/brake-ecu/hosts")) == [
            "pressure_sensor", "actuator", "tire_pressure_monitor"]
        funcs = {i["id"]: i for i in (await get(gw, "/functions"))["items"]}
        assert list(funcs) == ["engine-monitoring", "braking", "environment-sensing",
                               "body-control"]
        assert funcs["braking"][gw.xv]["source"] == "manifest"
        assert (await get(gw, "/functions/braking"))["name"] == "Braking"
        assert ids(await get(gw, "/functions/braking/hosts")) == [
            "pressure_sensor", "actuator", "tire_pressure_monitor"]
        caps = {c["name"] for c in (await get(gw, "/components/engine-ecu"))["capabilities"]}
        assert {"hosts", "depends-on", "subcomponents", "data"} <= caps

    demo(gateway, scenario)


def test_app_relationships(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        located = await get(gw, "/apps/temp_sensor/is-located-on")
        assert ids(located) == ["engine-sensor-board"]
        assert located["_links"] == {"self": f"{API}/apps/temp_sensor/is-located-on",
                                     "app": f"{API}/apps/temp_sensor"}
        assert located[gw.xv]["total_count"] == 1
        assert ids(await get(gw, "/apps/temp_sensor/belongs-to")) == ["engine"]
        assert ids(await get(gw, "/apps/status_sensor/belongs-to")) == ["doors"]
        # main-computer has no area: 0 items
        assert (await get(gw, "/apps/managed_lifecycle/belongs-to"))["items"] == []
        assert ids(await get(gw, "/apps/managed_lifecycle/is-located-on")) == [
            "main-computer"]
        body = await gw.error("GET", f"{API}/apps/no_such_app/belongs-to", 404)
        assert body["parameters"]["app_id"] == "no_such_app"
        # depends-on of an app (conformance)
        body = await get(gw, "/apps/actuator/depends-on")
        assert ids(body) == ["pressure_sensor"]
        assert body["_links"] == {"self": f"{API}/apps/actuator/depends-on",
                                  "app": f"{API}/apps/actuator"}
        assert ids(await get(gw, "/apps/temp_sensor/depends-on")) == []
        caps = {c["name"] for c in (await get(gw, "/apps/actuator"))["capabilities"]}
        assert "depends-on" in caps
        body = await gw.error("GET", f"{API}/apps/no_such_app/depends-on", 404)
        assert body["error_code"] == NOT_FOUND[gw.profile]
        assert body["parameters"]["app_id"] == "no_such_app"

    demo(gateway, scenario)


def test_top_level_lists_hold_no_nested_entities(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        assert ids(await get(gw, "/areas")) == ["powertrain", "chassis", "body", "perception"]
        comps = ids(await get(gw, "/components"))
        assert "door-module-fl" not in comps and "light-module" not in comps
        assert {"engine-ecu", "body-ecu", "main-computer"} <= set(comps)
        # nested ones stay reachable where they belong, and by id
        assert ids(await get(gw, "/areas/body/subareas")) == ["doors", "lights"]
        await get(gw, "/areas/doors")
        await get(gw, "/components/light-module")

    demo(gateway, scenario)


def test_nameplates_with_provenance(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        brake = await get(gw, "/components/brake-ecu")
        assert brake[gw.xv]["source"] == "manifest"
        ident = brake[gw.xv]["identity"]
        assert ident["manufacturer"] == "Continental" and ident["serialNumber"] == "ECU-BR-1107"
        assert ident["extra"] == {"rack": "R3"}  # filled from the inventory CSV
        assert ident["_provenance"]["serial_number"] == "manifest"
        assert ident["_provenance"]["extra.rack"] == "inventory"
        pump = await get(gw, "/components/coolant-pump")
        assert pump["name"] == "Grundfos CR-5" and pump[gw.xv]["source"] == "inventory"
        assert pump[gw.xv]["identity"]["serialNumber"] == "GP-2214"
        assert pump[gw.xv]["identity"]["_provenance"]["firmware_version"] == "inventory"
        comps = {i["id"]: i for i in (await get(gw, "/components"))["items"]}
        assert comps["lidar-unit"][gw.xv]["source"] == "inventory"

    demo(gateway, scenario)


def test_area_aggregates_data_operations_and_faults_of_its_descendants(
        gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        data = await get(gw, "/areas/powertrain/data")
        topics = {i["id"]: i for i in data["items"]}
        assert TEMPERATURE_TOPIC in topics
        assert "temp_sensor" in topics[TEMPERATURE_TOPIC][gw.xv]["member_ids"]
        members = {m for i in data["items"] for m in i[gw.xv]["member_ids"]}
        assert members <= {"temp_sensor", "temp_monitor", "rpm_sensor", "calibration",
                           "long_calibration"}
        assert not any(t.startswith("/perception") for t in topics)
        ops = (await get(gw, "/areas/powertrain/operations"))["items"]
        assert {m for o in ops for m in o[gw.xv]["member_ids"]} >= {"calibration"}
        assert not any(m == "actuator" for o in ops for m in o[gw.xv]["member_ids"])
        params = (await get(gw, "/areas/engine/configurations"))["items"]
        assert {p["id"].partition(":")[0] for p in params} <= {
            "temp_sensor", "temp_monitor", "rpm_sensor", "calibration", "long_calibration"}
        assert any(p["id"].startswith("temp_sensor:") for p in params)
        # a lidar fault shows on its area, not on the others
        await gw.report_faults(Report("LIDAR_RANGE_INVALID", "FAILED", CRITICAL,
                                      "min_range > max_range", LIDAR))
        body = await get(gw, "/areas/perception/faults")
        assert "LIDAR_RANGE_INVALID" in {f["fault_code"] for f in body["items"]}
        assert body[gw.xv]["entity_id"] == "perception"
        body = await get(gw, "/areas/powertrain/faults")
        assert not any(f["fault_code"].startswith("LIDAR") for f in body["items"])
        gw.bridge.rosout("perception.lidar.lidar_sensor", 40, "[LIDAR_RANGE_INVALID] range",
                         1_700_000_000_000_000_000)
        logs = await get(gw, "/areas/perception/logs")
        assert {e["context"]["node"] for e in logs["items"]} == {LIDAR}
        assert (await get(gw, "/areas/powertrain/logs"))["items"] == []

    demo(gateway, scenario)


def test_manifest_status_and_health(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status = await get(gw, "/manifest/status")
        assert status["active"] is True and status["path"].endswith("manifest.yaml")
        assert status["mode"] == "hybrid"
        assert status["manifest_version"] == "1.0"
        assert status["metadata"]["name"] == "demo-vehicle"
        assert status["entity_counts"] == {"areas": 8, "components": 12, "apps": 13,
                                           "functions": 4, "scripts": 0}
        assert status["validation"]["is_valid"] is True
        assert status["inventory"]["skipped_rows"] == []
        disc = (await get(gw, "/health"))["discovery"]
        assert disc["mode"] == "hybrid"
        assert disc["pipeline"]["layers"] == ["manifest", "runtime"]
        assert disc["pipeline"]["total_entities"] >= 37
        linking = disc["linking"]
        assert linking["linked_count"] == len(BOUND)
        assert linking["binding_conflicts"] == 0 and linking["unmanifested_policy"] == "warn"

    demo(gateway, scenario)


def test_manifest_only_serves_declared_entities(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        items = (await get(gw, "/apps"))["items"]
        assert {i["id"] for i in items} == {*BOUND, "tire_pressure_monitor"}
        assert not any(i[gw.xv]["is_online"] for i in items)
        assert "ros2" not in (await get(gw, "/apps/temp_sensor"))[gw.xv]
        assert set(ids(await get(gw, "/areas"))) == AREAS
        assert ids(await get(gw, "/components/engine-ecu/hosts")) == [
            "temp_monitor", "calibration", "long_calibration"]
        disc = (await get(gw, "/health"))["discovery"]
        assert disc["mode"] == "manifest_only" and "linking" not in disc
        assert disc["pipeline"]["layers"] == ["manifest"]
        status = await get(gw, "/manifest/status")
        assert status["mode"] == "manifest_only" and status["entity_counts"]["apps"] == 13

    demo(gateway, scenario, mode="manifest_only")


# --- errors over a loaded manifest -------------------------------------------------------------


def test_offline_app_lifecycle_error_names_the_app(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", f"{API}/apps/tire_pressure_monitor/status/restart", 503)
        assert "None" not in body["message"] and "tire_pressure_monitor" in body["message"]

    demo(gateway, scenario)


def test_execution_id_with_braces(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        path = f"{API}/apps/calibration/operations/calibrate/executions/%7Bnope%7D"
        for method in ("GET", "DELETE"):
            body = await gw.error(method, path, 404)
            assert body["error_code"] == "resource-not-found"
            assert body["parameters"]["execution_id"] == "{nope}", body
            if gw.profile == "medkit":
                assert body["message"] == "Execution not found"

    demo(gateway, scenario)


def test_invalid_id_on_a_nested_discovery_route(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"{API}/areas/bad%20id/subareas", 400)
        assert body["error_code"] == "invalid-parameter"
        if gw.profile == "medkit":
            assert body["message"] == "Invalid area ID"
            assert body["parameters"]["area_id"] == "bad id" and body["parameters"]["details"]
        else:
            assert body["parameters"]["entity_id"] == "bad id"

    demo(gateway, scenario)


def test_fault_status_error_names_the_entity(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"{API}/apps/lidar_sensor/faults?status=bogus", 400)
        assert body["error_code"] == "invalid-parameter"
        assert body["parameters"]["app_id"] == "lidar_sensor"
        assert body["parameters"]["parameter"] == "status"

    demo(gateway, scenario)


def test_product_names(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        root = (await get(gw, "/"))["name"]
        vendor = (await get(gw, "/version-info"))["items"][0]["vendor_info"]["name"]
        op = (await get(gw, "/apps/calibration/operations"))["items"][0]
        if gw.profile == "medkit":
            assert (root, vendor) == ("ROS 2 Medkit Gateway", "ros2_medkit")
            assert op["x-medkit"]["source"] == "ros2_medkit_gateway"
        else:
            assert root == vendor == op["x-vendor"]["source"] == "diag-gateway"

    demo(gateway, scenario)


def test_an_app_that_inherits_no_resources(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        app = await get(gw, "/apps/temp_sensor")
        assert app[gw.xv]["is_online"] is True
        assert app[gw.xv]["ros2"]["node"] == "/powertrain/engine/temp_sensor"
        assert (await get(gw, "/apps/temp_sensor/data"))["items"] == []  # no topics inherited
        body = await get(gw, "/apps/temp_sensor/configurations")
        names = {i["name"] for i in body["items"]}
        assert names == {"publish_rate", "min_temp", "max_temp", "temp_step"}
        await get(gw, f"/apps/temp_sensor/configurations/{sorted(names)[0]}")
        status = await get(gw, "/apps/managed_lifecycle/status")
        assert status["status"] == "ready" and "restart" in status
        status, began = await gw.json("PUT", f"{API}/apps/managed_lifecycle/status/start")
        assert status == 202 and began["status"] == "completed", began  # active: no steps
        graph = (await get(gw, f"/functions/engine-monitoring/{gw.xv}-graph"))[f"{gw.xv}-graph"]
        assert {n["entity_id"] for n in graph["nodes"]} == {"temp_sensor", "temp_monitor",
                                                            "rpm_sensor"}
        assert all(n["node_status"] == "reachable" for n in graph["nodes"])
        assert graph["edges"] == []  # the apps inherit no topics

    run_demo(gateway, scenario, ("plugins=[graph_provider]",),
             manifest=DEMO_MANIFEST.replace("inherit_runtime_resources: true",
                                            "inherit_runtime_resources: false"))


# --- the function graph, lifecycle and the OpenAPI document over the manifest ------------------


def test_graph_counts_a_member_app_that_never_ran(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        word = f"{gw.xv}-graph"
        body = (await get(gw, f"/functions/braking/{word}"))[word]
        nodes = {n["entity_id"]: n for n in body["nodes"]}
        assert nodes["tire_pressure_monitor"] == {"entity_id": "tire_pressure_monitor",
                                                  "node_status": "unreachable"}
        assert nodes["pressure_sensor"]["node_status"] == "reachable"
        assert body["pipeline_status"] == "degraded"
        # a trigger on a vendor collection is refused
        body = await gw.error("POST", f"{API}/functions/braking/triggers", 400, json={
            "resource": f"{API}/functions/braking/{word}", "path": "/pipeline_status",
            "trigger_condition": {"condition_type": "OnChange"}})
        assert body["error_code"] == "invalid-parameter"
        assert body["parameters"]["collection"] == word
        assert (await get(gw, "/functions/braking/triggers"))["items"] == []

    demo(gateway, scenario, settings=("plugins=[graph_provider]",))


def test_force_restart(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status = await get(gw, "/apps/managed_lifecycle/status")
        assert status["force-restart"] == f"{API}/apps/managed_lifecycle/status/force-restart"
        code, body = await gw.json("PUT", f"{API}/apps/managed_lifecycle/status/force-restart")
        assert code == 202, body
        assert body["apps"][0]["steps"] == ["deactivate", "cleanup", "configure", "activate"]
        for _ in range(500):
            done = await get(gw, "/apps/managed_lifecycle/status")
            if done[gw.xv]["lifecycle"]["transition"]["status"] != "inProgress":
                break
            await asyncio.sleep(0.01)
        assert done[gw.xv]["lifecycle"]["transition"]["status"] == "completed"
        assert done["status"] == "ready"

    demo(gateway, scenario)


def test_lifecycle_operation_ids_and_the_sovd_version_in_the_docs(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        doc = await get(gw, "/docs")
        paths = doc["paths"]
        # the medkit profile writes them camelCase, as the reference's document does
        want = camel_case if gw.profile == "medkit" else str
        assert paths["/apps/{app_id}/status"]["get"]["operationId"] == want("get_app_status")
        assert paths["/components/{component_id}/status"]["get"]["operationId"] == \
            want("get_component_status")
        assert paths["/apps/{app_id}/status/force-restart"]["put"]["operationId"] == \
            want("put_app_status_force_restart")
        assert paths["/components/{component_id}/status/restart"]["put"]["operationId"] == \
            want("put_component_status_restart")
        assert doc["x-sovd-version"] == doc["info"]["x-sovd-version"]
        generic = doc["components"]["responses"]["GenericError"]
        assert generic["x-sovd-version"] == doc["x-sovd-version"]
        assert generic["content"]["application/json"]["schema"]["$ref"] == \
            "#/components/schemas/GenericError"

    demo(gateway, scenario)


def test_method_a_path_does_not_serve(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        if gw.profile == "medkit":
            body = await gw.error("PATCH", f"{API}/apps", 404)
        else:
            body = await gw.error("PATCH", f"{API}/apps", 405)
            async with gw.client.request("PATCH", f"{API}/apps") as resp:
                assert resp.headers["allow"] == "GET, HEAD"
        assert body["error_code"] == "resource-not-found"

    demo(gateway, scenario)


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


@pytest.mark.parametrize("rule", sorted(INVALID))
def test_an_invalid_manifest_is_not_served(tmp_path: Path, rule: str) -> None:
    async def scenario(gw: Gw) -> None:
        raise AssertionError("a gateway behind an invalid manifest served")

    inventory = "name,model\nx,y\n" if rule == "INVENTORY_CSV" else None  # no id column
    with pytest.raises(ManifestError) as caught:
        run_gateway(tmp_path, "spec", scenario, manifest=INVALID[rule], inventory=inventory)
    text, path = str(caught.value), tmp_path / "manifest.yaml"
    assert text.startswith("invalid manifest"), text
    assert f"[{rule}]" in text, (rule, text)
    if rule in ENTITY:
        assert f"'{ENTITY[rule]}'" in text, (rule, text)
        assert f"(at {path}:" in text, (rule, text)  # the file and the line
    if rule == "LOAD":
        assert f"{path}:12" in text and "not valid YAML" in text, text
