"""The gateway against the real demo robot: discovery, data, server resources (handler errors,
OpenAPI documents and wire shapes are tested in process: tests/inproc/)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import NODES, Robot, ros_env
from tests.conftest import free_port
from tests.harness import Gateway, assert_error, enc

pytestmark = pytest.mark.integration

TEMPERATURE = "/powertrain/engine/temperature"


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    log = tmp_path_factory.mktemp("gw") / "gateway.log"
    with Gateway(free_port(), domain, ["topic_sample_timeout_sec=3.0"], log) as g:
        g.wait_for("/apps", lambda b: len(b["items"]) >= len(NODES), timeout=20)
        yield g


def ids(body: dict) -> set[str]:
    return {item["id"] for item in body["items"]}


def test_apps_are_the_twelve_demo_nodes(gw: Gateway) -> None:
    body = gw.get("/apps").json()
    assert ids(body) == set(NODES)
    assert body["x-vendor"]["total_count"] == 14
    item = next(i for i in body["items"] if i["id"] == "temp_sensor")
    host = gw.get("/components").json()["items"][0]["id"]
    assert item == {"id": "temp_sensor", "name": "temp_sensor", "type": "app",
                    "href": "/api/v1/apps/temp_sensor",
                    "x-vendor": {"source": "heuristic", "is_online": True,
                                 "component_id": host,
                                 "ros2": {"node": "/powertrain/engine/temp_sensor",
                                          "namespace": "/powertrain/engine"}}}


def test_runtime_only_entities(gw: Gateway) -> None:
    assert gw.get("/areas").json()["items"] == []
    assert ids(gw.get("/functions").json()) == {"powertrain", "chassis", "body", "perception",
                                                "root"}
    comps = gw.get("/components").json()["items"]
    assert len(comps) == 1
    host = comps[0]["id"]
    hosts = gw.get(f"/components/{host}/hosts").json()
    assert ids(hosts) == set(NODES)
    detail = gw.get(f"/components/{host}").json()
    assert detail["type"] == "component"
    assert detail["x-vendor"]["identity"]["networkEndpoint"]
    caps = {c["name"] for c in detail["capabilities"]}
    assert {"data", "hosts", "depends-on", "subcomponents"} <= caps
    assert gw.get(f"/components/{host}/depends-on").json()["items"] == []
    assert gw.get(f"/components/{host}/subcomponents").json()["items"] == []
    func = gw.get("/functions/powertrain/hosts").json()
    assert ids(func) == {"temp_sensor", "temp_monitor", "rpm_sensor", "calibration",
                         "long_calibration"}
    assert ids(gw.get("/functions/root/hosts").json()) == {
        "managed_lifecycle", "unresponsive_param", "lifecycle_standby", "lifecycle_worker"}


def test_live_temperature_sample(gw: Gateway) -> None:
    resp = gw.get(f"/apps/temp_sensor/data/{enc(TEMPERATURE)}")
    assert resp.status == 200, resp
    body = resp.json()
    assert body["id"] == TEMPERATURE
    assert 85.0 <= body["data"]["temperature"] <= 95.0
    assert set(body["data"]["header"]) == {"stamp", "frame_id"}
    xv = body["x-vendor"]
    assert xv["status"] == "data" and xv["entity_id"] == "temp_sensor"
    assert xv["ros2"] == {"topic": TEMPERATURE, "type": "sensor_msgs/msg/Temperature"}
    assert xv["publisher_count"] == 1 and xv["subscriber_count"] == 1  # temp_monitor
    assert isinstance(xv["timestamp"], int) and abs(xv["timestamp"] - time.time_ns()) < 60e9
    # a later read shows a newer sample (2 Hz)
    gw.wait_for(f"/apps/temp_sensor/data/{enc(TEMPERATURE)}",
                lambda b: b["x-vendor"]["timestamp"] > xv["timestamp"], timeout=30)


def test_aggregated_data_merges_topics_by_path(gw: Gateway) -> None:
    body = gw.wait_for("/functions/chassis/data", lambda b: len(next(
        (i["x-vendor"]["member_ids"] for i in b["items"] if i["id"] == "/chassis/brakes/pressure"),
        [])) == 2, timeout=45)  # the actuator's subscription may join the graph later
    items = {i["id"]: i for i in body["items"]}
    pressure = items["/chassis/brakes/pressure"]["x-vendor"]
    assert sorted(pressure["member_ids"]) == ["actuator", "pressure_sensor"]
    assert pressure["ros2"]["direction"] == "publish"
    assert items["/chassis/brakes/command"]["x-vendor"]["member_ids"] == ["actuator"]
    host = gw.get("/components").json()["items"][0]["id"]
    comp_items = ids(gw.get(f"/components/{host}/data").json())
    assert {TEMPERATURE, "/perception/lidar/scan", "/body/lights/status"} <= comp_items
    assert not any(t in comp_items for t in ("/rosout", "/parameter_events"))
    # the bare topic path reads through the function too
    read = gw.get(f"/functions/powertrain/data/{enc(TEMPERATURE)}").json()
    assert read["x-vendor"]["entity_id"] == "powertrain" and "temperature" in read["data"]
    # and a member-qualified id addresses that member's item
    read = gw.get(f"/functions/powertrain/data/{enc('temp_sensor:' + TEMPERATURE)}")
    assert read.status == 200, read


def test_publish_reaches_the_robot(gw: Gateway) -> None:
    # the node is listed before DDS has told all its endpoints on a busy machine
    gw.wait_for("/apps/controller/data", lambda b: "/body/lights/command" in ids(b), timeout=30)
    resp = gw.request("PUT", f"/apps/controller/data/{enc('/body/lights/command')}",
                      {"data": True})
    assert resp.status == 200, resp
    assert resp.json()["x-vendor"]["status"] == "published"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        gw.request("PUT", f"/apps/controller/data/{enc('/body/lights/command')}", {"data": True})
        read = gw.get(f"/apps/controller/data/{enc('/body/lights/status')}").json()
        if read["data"].get("data") is True:
            break
        time.sleep(0.3)
    else:
        pytest.fail(f"controller never reported the commanded state: {read}")


def test_http_layer_errors(gw: Gateway) -> None:
    # the server's own parser limits (the middleware's checks are tested in process)
    body = assert_error(gw.get("/apps/" + "a" * 9000), 414, "resource-not-found")
    assert body["parameters"]["status"] == 414
    assert_error(gw.get("/apps/" + "a" * 70000), 414, "resource-not-found")


def test_server_resources(gw: Gateway) -> None:
    root = gw.get("/").json()
    assert root["api_base"] == "/api/v1" and root["name"] == "diag-gateway"
    assert "GET /api/v1/apps/{app_id}/data/{data_id}" in root["endpoints"]
    assert root["capabilities"]["discovery"] is True
    assert root["capabilities"]["data_access"] is True
    assert root["capabilities"]["aggregation"] is False
    info = gw.get("/version-info").json()["items"][0]
    assert info["base_uri"] == "/api/v1" and info["vendor_info"]["name"] == "diag-gateway"
    health = gw.wait_for("/health", lambda h: h["ready"], timeout=30)
    assert health["status"] == "healthy" and health["warning_schema_version"] == 2
    assert health["warnings"] == []
    assert health["discovery"]["mode"] == "runtime_only"
    assert health["discovery"]["pipeline"]["total_entities"] == 14 + 1 + 5
    pool = health["x-vendor-data-provider"]
    assert pool["pool_size"] >= 1 and pool["pool_cap"] == 64
    assert health["x-vendor-subscription-executor"]["worker_alive"] is True
    assert health["x-vendor-entity-cache"]["generation"] >= 1
    msgconv = health["x-vendor-msgconv"]
    assert msgconv["implementation"] in ("compiled", "stock")
    if os.environ.get("DIAG_GATEWAY_REQUIRE_EXT") == "1":  # make test builds the twin
        assert msgconv == {"implementation": "compiled", "compiled_twin_loaded": True}
    assert "peers" not in health


def test_node_started_later_appears_and_leaves(gw: Gateway, domain: int, tmp_path: Path) -> None:
    script = tmp_path / "late.py"
    script.write_text(
        "import rclpy, signal\n"
        "from rclpy.executors import ExternalShutdownException\n"
        "rclpy.init()\n"
        "n = rclpy.create_node('late_joiner', namespace='/late')\n"
        "try:\n    rclpy.spin(n)\n"
        "except (KeyboardInterrupt, ExternalShutdownException):\n    pass\n"
        "rclpy.try_shutdown()\n")
    proc = subprocess.Popen([sys.executable, str(script)], env=ros_env(domain))
    # budgets for a loaded machine: discovery and the leave of a killed node can take a while
    try:
        gw.wait_for("/apps", lambda b: "late_joiner" in ids(b), timeout=45)
        gw.wait_for("/functions", lambda b: "late" in ids(b), timeout=45)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:  # DDS teardown can stall under load; the lease ends it
            proc.kill()
            proc.wait(20)
    gw.wait_for("/apps", lambda b: "late_joiner" not in ids(b), timeout=45)
    gw.wait_for("/functions", lambda b: "late" not in ids(b), timeout=45)


def test_vendor_word_is_a_setting(robot: Robot, domain: int) -> None:
    with Gateway(free_port(), domain, ["api.vendor=medkit", "plugins=[graph_provider]"]) as g:
        g.wait_for("/apps", lambda b: "x-medkit" in b and "unresponsive_param" in ids(b))
        deadline = time.monotonic() + 45  # its parameter services may be discovered later
        resp = g.get("/apps/unresponsive_param/configurations")
        while resp.status == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
            resp = g.get("/apps/unresponsive_param/configurations")
        body = assert_error(resp, 503, "vendor-error")
        assert body["vendor_code"] == "x-medkit-ros2-node-unavailable"
        assert "x-medkit-data-provider" in g.get("/health").json()
        assert "/functions/{function_id}/x-medkit-graph" in g.get("/docs").json()["paths"]
