"""Conformance against the demo robot behind the shipped manifest, in both wire profiles:
relationship and discovery answers, the watchdog app, the function graph, lifecycle control,
/health's executor block, the OpenAPI document and the medkit profile's wording."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import NODES, Robot
from gateway.wire.docs import camel_case
from tests.conftest import free_port
from tests.harness import Gateway, assert_error

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "demo_manifest.yaml"
PROFILES = ("spec", "medkit")
XV = {"spec": "x-vendor", "medkit": "x-medkit"}
CALIBRATE = "/apps/calibration/operations/calibrate/executions"


def start(domain: int, tmp: Path, name: str, manifest: Path, *extra: str) -> Gateway:
    settings = ["discovery.mode=hybrid", f"discovery.manifest_path={manifest}",
                "discovery.refresh_debounce_ms=100", f"state_dir={tmp / name}",
                "parameter_service_timeout_sec=5", *extra]
    return Gateway(free_port(), domain, settings, tmp / f"{name}.log").start()


@pytest.fixture(scope="module")
def gateways(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, Gateway]]:
    tmp = tmp_path_factory.mktemp("conformance")
    gws: dict[str, Gateway] = {}
    try:
        for profile in PROFILES:
            gws[profile] = start(
                domain, tmp, profile, MANIFEST, f"api.profile={profile}",
                "plugins=[graph_provider,graph_watchdog]",
                "plugins.graph_watchdog.warmup_cycles=2",
                "plugins.graph_watchdog.tick_interval_ms=500",
                "snapshots.rosbag.enabled=true", "snapshots.rosbag.duration_sec=1",
                "snapshots.rosbag.duration_after_sec=1")
        for profile, g in gws.items():
            g.wait_for("/apps", lambda b, p=profile: sum(
                i[XV[p]]["is_online"] for i in b["items"]) >= len(NODES), timeout=40)
        yield gws
    finally:
        for g in gws.values():
            g.stop()


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def gw(gateways: dict[str, Gateway], profile: str) -> Gateway:
    return gateways[profile]


def ids(body: dict[str, Any]) -> list[str]:
    return [i["id"] for i in body["items"]]


# --- discovery -------------------------------------------------------------------------------


def test_app_depends_on(gw: Gateway, profile: str) -> None:
    body = gw.get("/apps/actuator/depends-on").json()
    assert ids(body) == ["pressure_sensor"]
    assert body["_links"] == {"self": "/api/v1/apps/actuator/depends-on",
                              "app": "/api/v1/apps/actuator"}
    assert ids(gw.get("/apps/temp_sensor/depends-on").json()) == []
    caps = {c["name"] for c in gw.get("/apps/actuator").json()["capabilities"]}
    assert "depends-on" in caps
    body = assert_error(gw.get("/apps/no_such_app/depends-on"), 404,
                        "entity-not-found" if profile == "medkit" else "resource-not-found")
    assert body["parameters"]["app_id"] == "no_such_app"


def test_top_level_lists_hold_no_nested_entities(gw: Gateway) -> None:
    assert ids(gw.get("/areas").json()) == ["powertrain", "chassis", "body", "perception"]
    comps = ids(gw.get("/components").json())
    assert "door-module-fl" not in comps and "light-module" not in comps
    assert {"engine-ecu", "body-ecu", "main-computer"} <= set(comps)
    # nested ones stay reachable where they belong, and by id
    assert ids(gw.get("/areas/body/subareas").json()) == ["doors", "lights"]
    assert gw.get("/areas/doors").status == 200
    assert gw.get("/components/light-module").status == 200


# --- the watchdog is an app -------------------------------------------------------------------


def test_watchdog_faults_belong_to_its_app(gw: Gateway, profile: str) -> None:
    app = gw.get("/apps/graph_watchdog").json()
    host = app[XV[profile]]["component_id"]
    fault = "/apps/graph_watchdog/faults/GRAPH_QOS_MISMATCH"
    gw.wait_for(fault, lambda b: b["item"]["code"] == "GRAPH_QOS_MISMATCH", timeout=40)
    under_host = gw.get(f"/components/{host}/faults").json()
    assert "GRAPH_QOS_MISMATCH" in {i["fault_code"] for i in under_host["items"]}
    assert gw.request("DELETE", fault).status == 204  # cleared (the next sweep raises it again)
    assert gw.get("/apps/graph_watchdog/faults/NO_SUCH_CODE").status == 404


# --- function graph and triggers -------------------------------------------------------------


def test_graph_counts_a_member_app_that_never_ran(gw: Gateway, profile: str) -> None:
    word = "x-medkit-graph" if profile == "medkit" else "x-vendor-graph"
    doc = gw.get(f"/functions/braking/{word}")
    assert doc.status == 200, doc
    body = next(iter(doc.json().values()))
    nodes = {n["entity_id"]: n for n in body["nodes"]}
    assert nodes["tire_pressure_monitor"] == {"entity_id": "tire_pressure_monitor",
                                              "node_status": "unreachable"}
    assert nodes["pressure_sensor"]["node_status"] == "reachable"
    assert body["pipeline_status"] == "degraded"


def test_trigger_on_a_vendor_collection_is_refused(gw: Gateway, profile: str) -> None:
    word = "x-medkit-graph" if profile == "medkit" else "x-vendor-graph"
    resp = gw.request("POST", "/functions/braking/triggers", {
        "resource": f"/api/v1/functions/braking/{word}", "path": "/pipeline_status",
        "trigger_condition": {"condition_type": "OnChange"}})
    body = assert_error(resp, 400, "invalid-parameter")
    assert body["parameters"]["collection"] == word
    assert gw.get("/functions/braking/triggers").json()["items"] == []


# --- lifecycle ---------------------------------------------------------------------------------


def test_offline_app_lifecycle_error_names_the_app(gw: Gateway) -> None:
    body = assert_error(gw.request("PUT", "/apps/tire_pressure_monitor/status/restart"), 503)
    assert "None" not in body["message"] and "tire_pressure_monitor" in body["message"]


def test_force_restart(gw: Gateway, profile: str) -> None:
    status = gw.get("/apps/managed_lifecycle/status").json()
    assert status["force-restart"] == "/api/v1/apps/managed_lifecycle/status/force-restart"
    resp = gw.request("PUT", "/apps/managed_lifecycle/status/force-restart")
    assert resp.status == 202, resp
    assert resp.json()["apps"][0]["steps"] == ["deactivate", "cleanup", "configure", "activate"]
    done = gw.wait_for("/apps/managed_lifecycle/status", lambda b: b[XV[profile]][
        "lifecycle"]["transition"]["status"] != "inProgress", timeout=30)
    assert done[XV[profile]]["lifecycle"]["transition"]["status"] == "completed"
    assert done["status"] == "ready"


def test_lifecycle_operation_ids_are_singular(gw: Gateway, profile: str) -> None:
    paths = gw.get("/docs").json()["paths"]
    # the medkit profile writes them camelCase, as the reference's document does
    want = camel_case if profile == "medkit" else str
    assert paths["/apps/{app_id}/status"]["get"]["operationId"] == want("get_app_status")
    assert paths["/components/{component_id}/status"]["get"]["operationId"] == \
        want("get_component_status")
    assert paths["/apps/{app_id}/status/force-restart"]["put"]["operationId"] == \
        want("put_app_status_force_restart")
    assert paths["/components/{component_id}/status/restart"]["put"]["operationId"] == \
        want("put_component_status_restart")


def test_configurations_of_an_app_that_inherits_no_resources(
        robot: Robot, domain: int, tmp_path: Path) -> None:
    manifest = tmp_path / "no_inherit.yaml"
    manifest.write_text(MANIFEST.read_text().replace("inherit_runtime_resources: true",
                                                     "inherit_runtime_resources: false"))
    gw = start(domain, tmp_path, "no_inherit", manifest, "plugins=[graph_provider]")
    try:
        app = gw.wait_for("/apps/temp_sensor", lambda b: b["x-vendor"]["is_online"],
                          timeout=40)
        assert app["x-vendor"]["ros2"]["node"] == "/powertrain/engine/temp_sensor"
        assert gw.get("/apps/temp_sensor/data").json()["items"] == []  # no topics inherited
        # (on a busy machine the node's first parameter answer may miss its budget: retried)
        body = gw.wait_for("/apps/temp_sensor/configurations", lambda b: b["items"],
                           timeout=40)
        names = {i["name"] for i in body["items"]}
        one = gw.get(f"/apps/temp_sensor/configurations/{sorted(names)[0]}")
        assert one.status == 200, one
        # (a new gateway's first GetState may time out while its client matches the service)
        # (its operations are listed once the node's lifecycle services are on the graph)
        status = gw.wait_for("/apps/managed_lifecycle/status",
                             lambda b: b["status"] == "ready" and "restart" in b, timeout=30)
        assert "restart" in status
        began = gw.request("PUT", "/apps/managed_lifecycle/status/start")  # active: no steps
        assert began.status == 202 and began.json()["status"] == "completed", began
        graph = gw.wait_for("/functions/engine-monitoring/x-vendor-graph", lambda b: all(
            n["node_status"] == "reachable" for n in b["x-vendor-graph"]["nodes"]),
            timeout=30)["x-vendor-graph"]  # (each app is linked once its node shows up)
        assert {n["entity_id"] for n in graph["nodes"]} == {"temp_sensor", "temp_monitor",
                                                            "rpm_sensor"}
        assert graph["edges"] == []  # the apps inherit no topics
    finally:
        gw.stop()


# --- server ------------------------------------------------------------------------------------


def test_health_executor_fields(gw: Gateway, profile: str) -> None:
    executor = gw.get("/health").json()[f"{XV[profile]}-subscription-executor"]
    assert {"worker_alive", "degraded", "queue_depth", "queue_max_depth_observed",
            "queue_dropped", "tasks_completed", "tasks_failed", "last_task_latency_us",
            "max_task_latency_us", "current_task_age_ms", "watchdog_trips",
            "graph_events_received"} <= set(executor)
    assert executor["queue_max_depth_observed"] >= executor["queue_depth"] >= 0
    assert all(isinstance(executor[k], int) and executor[k] >= 0 for k in (
        "queue_dropped", "watchdog_trips", "current_task_age_ms"))


def test_execution_id_with_braces(gw: Gateway, profile: str) -> None:
    for method in ("GET", "DELETE"):
        body = assert_error(gw.request(method, f"{CALIBRATE}/%7Bnope%7D"), 404,
                            "resource-not-found")
        assert body["parameters"]["execution_id"] == "{nope}", body
        if profile == "medkit":
            assert body["message"] == "Execution not found"


def test_docs_carry_the_sovd_version(gw: Gateway) -> None:
    doc = gw.get("/docs").json()
    assert doc["x-sovd-version"] == doc["info"]["x-sovd-version"]
    generic = doc["components"]["responses"]["GenericError"]
    assert generic["x-sovd-version"] == doc["x-sovd-version"]
    assert generic["content"]["application/json"]["schema"]["$ref"] == \
        "#/components/schemas/GenericError"


# --- wording and names per profile ------------------------------------------------------------


def test_invalid_id_on_a_nested_discovery_route(gw: Gateway, profile: str) -> None:
    body = assert_error(gw.get("/areas/bad%20id/subareas"), 400, "invalid-parameter")
    if profile == "medkit":
        assert body["message"] == "Invalid area ID"
        assert body["parameters"]["area_id"] == "bad id" and body["parameters"]["details"]
    else:
        assert body["parameters"]["entity_id"] == "bad id"


def test_method_a_path_does_not_serve(gw: Gateway, profile: str) -> None:
    resp = gw.request("PATCH", "/apps")
    if profile == "medkit":
        assert_error(resp, 404, "resource-not-found")
    else:
        assert_error(resp, 405, "resource-not-found")
        assert resp.headers["allow"] == "GET, HEAD"


def test_fault_status_error_names_the_entity(gw: Gateway) -> None:
    body = assert_error(gw.get("/apps/lidar_sensor/faults?status=bogus"), 400,
                        "invalid-parameter")
    assert body["parameters"]["app_id"] == "lidar_sensor"
    assert body["parameters"]["parameter"] == "status"


def test_product_names(gw: Gateway, profile: str) -> None:
    root = gw.get("/").json()["name"]
    vendor = gw.get("/version-info").json()["items"][0]["vendor_info"]["name"]
    op = gw.get("/apps/calibration/operations").json()["items"][0]
    if profile == "medkit":
        assert (root, vendor) == ("ROS 2 Medkit Gateway", "ros2_medkit")
        assert op["x-medkit"]["source"] == "ros2_medkit_gateway"
    else:
        assert root == vendor == op["x-vendor"]["source"] == "diag-gateway"


def test_log_and_recording_id_prefixes(gw: Gateway, profile: str) -> None:
    logs = gw.wait_for("/apps/temp_sensor/logs", lambda b: b["items"], timeout=30)["items"]
    recs = gw.wait_for("/apps/lidar_sensor/bulk-data/rosbags", lambda b: b["items"],
                       timeout=40)["items"]
    if profile == "medkit":
        assert all(e["id"].startswith("log_") and e["id"][4:].isdigit() for e in logs)
        assert all(r["id"].startswith("fault_") for r in recs)
    else:
        assert all(e["id"].isdigit() for e in logs)
        assert all(r["id"].startswith("rec_") for r in recs)
    rec = recs[0]
    assert gw.get(f"/apps/lidar_sensor/bulk-data/rosbags/{rec['id']}").status == 200
    code = rec[XV[profile]]["fault_codes"][0]
    detail = gw.get(f"/apps/lidar_sensor/faults/{code}").json()
    bags = [s for s in detail["environment_data"]["snapshots"] if s["type"] == "rosbag"]
    assert bags and all(b[XV[profile]]["captured_at"].endswith("Z") for b in bags)
