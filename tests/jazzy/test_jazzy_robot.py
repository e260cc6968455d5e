"""Every capability against a ROS 2 Jazzy robot (Fast DDS 2.14) from the Kilted gateway."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import free_port
from tests.harness import Gateway, enc
from tests.integration.test_docs_examples import _reporting_example
from tests.jazzy.conftest import (
    JAZZY_PYTHON,
    JazzyProcess,
    jazzy_env,
    run_script,
    script_settings,
)

pytestmark = pytest.mark.integration

APPS = {"jz_sensor", "jz_calib", "jz_params", "jz_lifecycle", "jz_reporter"}
FIB = "/apps/jz_calib/operations/fibonacci/executions"


@pytest.fixture(scope="module")
def gw(jazzy_domain: int, jazzy_robot: JazzyProcess,
       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gateway")
    settings = ["faults.diagnostics_bridge.enabled=true", *script_settings(tmp)]
    with Gateway(free_port(), jazzy_domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: APPS <= {i["id"] for i in b["items"]}, timeout=60)
        g.wait_for("/apps/jz_calib/operations",
                   lambda b: {"calibrate", "set_enabled", "fibonacci"} <= ids(b), timeout=60)
        g.wait_for("/apps/jz_reporter/operations", lambda b: {"report", "pending"} <= ids(b),
                   timeout=60)
        yield g


def ids(body: dict[str, Any]) -> set[str]:
    return {i["id"] for i in body["items"]}


def location(resp: Any) -> str:
    return str(resp.headers["location"])[len("/api/v1"):]


def read(gw: Gateway, topic: str, predicate: Any = lambda d: True) -> dict[str, Any]:
    body = gw.wait_for(f"/apps/jz_sensor/data/{enc(topic)}",
                       lambda b: b.get("data") is not None and predicate(b["data"]), timeout=30)
    return body  # type: ignore[no-any-return]


def test_topics_with_schemas(gw: Gateway) -> None:
    body = gw.wait_for("/apps/jz_sensor/data",
                       lambda b: {"/jz/temperature", "/jz/command"} <= ids(b), timeout=30)
    item = next(i for i in body["items"] if i["id"] == "/jz/temperature")
    assert item["x-vendor"]["ros2"]["type"] == "sensor_msgs/msg/Temperature"
    props = item["x-vendor"]["type_info"]["schema"]["properties"]
    assert props["temperature"]["x-ros-type"] == "float64"


def test_reliable_best_effort_and_latched_reads(gw: Gateway) -> None:
    temp = read(gw, "/jz/temperature")
    assert 20.0 <= temp["data"]["temperature"] < 30.0 and temp["data"]["variance"] == 0.5
    assert read(gw, "/jz/scan_rate")["data"]["data"] >= 1.0  # best effort
    assert read(gw, "/jz/map_info")["data"] == {"data": "jazzy map v1"}  # published once


def test_put_reaches_the_jazzy_node(gw: Gateway) -> None:
    resp = gw.request("PUT", f"/apps/jz_sensor/data/{enc('/jz/command')}", {"data": "go-1"})
    assert resp.status == 200, resp
    read(gw, "/jz/command_echo", lambda d: d == {"data": "go-1"})


def test_services(gw: Gateway) -> None:
    resp = gw.request("POST", "/apps/jz_calib/operations/calibrate/executions", {})
    assert resp.status == 200, resp
    assert resp.json()["parameters"] == {"success": True, "message": "jazzy calibrated"}
    resp = gw.request("POST", "/apps/jz_calib/operations/set_enabled/executions",
                      {"parameters": {"data": True}})
    assert resp.json()["parameters"] == {"success": True, "message": "enabled=True"}


def test_action_feedback_result_and_cancel(gw: Gateway) -> None:
    resp = gw.request("POST", FIB, {"parameters": {"order": 5}})
    assert resp.status == 202, resp
    done = gw.wait_for(location(resp), lambda b: b["status"] != "running", timeout=30)
    assert done["status"] == "completed" and done["x-vendor"]["ros2_status"] == "SUCCEEDED"
    assert done["parameters"] == {"sequence": [0, 1, 1, 2, 3, 5]}
    resp = gw.request("POST", FIB, {"parameters": {"order": 40}})
    path = location(resp)
    running = gw.wait_for(path, lambda b: b["x-vendor"]["feedback_count"] >= 2, timeout=30)
    assert running["parameters"]["sequence"][:3] == [0, 1, 1]  # the latest feedback
    assert gw.request("PUT", path, {"capability": "stop"}).status == 202
    done = gw.wait_for(path, lambda b: b["status"] != "running", timeout=30)
    assert done["status"] == "failed" and done["x-vendor"]["ros2_status"] == "CANCELED"
    assert len(done["parameters"]["sequence"]) < 41


def test_parameters_of_eight_types(gw: Gateway) -> None:
    body = gw.wait_for("/apps/jz_params/configurations", lambda b: len(b["items"]) >= 8,
                       timeout=30)
    got = {i["id"]: (i["value"], i["x-vendor"]["ros2"]["type"]) for i in body["items"]}
    assert {k: got[k] for k in ("enabled", "count", "gain", "label", "flags", "ids",
                                 "weights", "names")} == {
        "enabled": (True, "bool"), "count": (7, "integer"), "gain": (1.5, "double"),
        "label": ("jazzy", "string"), "flags": ([True, False], "bool_array"),
        "ids": ([1, 2, 3], "integer_array"), "weights": ([0.5, 0.25], "double_array"),
        "names": (["a", "b"], "string_array")}
    for name, value in (("count", 9), ("weights", [2.0]), ("label", "kilted-set")):
        resp = gw.request("PUT", f"/apps/jz_params/configurations/{name}", {"value": value})
        assert resp.status == 200, resp
        assert gw.get(f"/apps/jz_params/configurations/{name}").json()["value"] == value


def test_rosout_logs(gw: Gateway) -> None:
    body = gw.wait_for("/apps/jz_sensor/logs", lambda b: any(
        e["message"] == "jz bus timeout" for e in b["items"]), timeout=30)
    info = [e for e in body["items"] if e["message"].startswith("jazzy sensor alive")]
    assert info and info[0]["severity"] == "info"
    assert info[0]["context"]["node"] == "/jz_sensor"


def test_bridges_raise_faults(gw: Gateway) -> None:
    resp = gw.request("POST", FIB, {"parameters": {"order": 100}})  # aborted by the server
    assert resp.status == 202, resp
    body = gw.wait_for("/faults", lambda b: {"JZ_MOTOR", "ACTION_FIBONACCI_ABORTED"} <= {
        f["fault_code"] for f in b["items"]} and any(
        f["fault_code"].startswith("LOG_JZ_SENSOR_") for f in b["items"]), timeout=30)
    motor = next(f for f in body["items"] if f["fault_code"] == "JZ_MOTOR")
    assert motor["source"] == "/jz_sensor" and motor["severity"] == "ERROR"


def test_lifecycle(gw: Gateway) -> None:
    gw.wait_for("/apps/jz_lifecycle/status",
                lambda b: b["x-vendor"].get("lifecycle", {}).get("state") == "unconfigured",
                timeout=30)
    resp = gw.request("PUT", "/apps/jz_lifecycle/status/start")
    assert resp.status in (200, 202), resp
    gw.wait_for("/apps/jz_lifecycle/status",
                lambda b: b["x-vendor"]["lifecycle"]["state"] == "active", timeout=30)


def test_a_jazzy_nodes_fault_reporter_is_acknowledged(gw: Gateway) -> None:
    resp = gw.request("POST", "/apps/jz_reporter/operations/report/executions",
                      {"parameters": {"data": True}})
    assert resp.status == 200, resp
    fault = gw.wait_for("/faults", lambda b: any(f["fault_code"] == "JZ_REPORTED"
                                                  for f in b["items"]), timeout=30)
    item = next(f for f in fault["items"] if f["fault_code"] == "JZ_REPORTED")
    assert item["source"] == "/jz_reporter" and item["description"] == "reported by a Jazzy node"

    def pending() -> str:
        resp = gw.request("POST", "/apps/jz_reporter/operations/pending/executions", {})
        return str(resp.json()["parameters"]["message"])

    deadline = time.monotonic() + 30
    while pending() != "0":  # the gateway's acknowledgement reached the Jazzy node
        assert time.monotonic() < deadline, "the report was never acknowledged"
        time.sleep(0.2)


def test_version_info_and_health_name_the_embedded_ros(gw: Gateway) -> None:
    ros2 = gw.get("/health").json()["x-vendor-ros2"]
    assert ros2["ros_distro"] == "kilted" and ros2["rclpy_version"].startswith("9.")
    assert ros2["rmw_implementation"] == "rmw_fastrtps_cpp"
    assert ros2["dds_implementation"] == "Fast DDS" and ros2["dds_version"].startswith("3.")
    info = gw.get("/version-info").json()
    assert info["items"][0]["x-vendor"]["ros2"] == ros2
    components = gw.get("/docs").json()["components"]  # both bodies as the OpenAPI document says
    for body, name in ((gw.get("/health").json(), "Health"), (info, "VersionInfo")):
        jsonschema.validate(body, {"$ref": f"#/components/schemas/{name}",
                                   "components": components})


def test_a_script_runs_the_robots_own_ros(gw: Gateway) -> None:
    """Started from a clean shell, the script's Jazzy Python bootstraps its own libraries."""
    out = run_script(gw)
    assert "rclpy 7." in out and "/.jazzy/" in out, out


def test_the_docs_reporting_example_runs_on_jazzy(gw: Gateway, jazzy_domain: int,
                                                  reporter_site: Path, tmp_path: Path) -> None:
    """docs/faults.md's battery node, run as printed by Jazzy's Python with the reporter."""
    script = tmp_path / "battery.py"
    script.write_text(_reporting_example() + "\n", encoding="utf-8")
    proc = subprocess.Popen([str(JAZZY_PYTHON), str(script), "--ros-args", "-p", "voltage:=9.8"],
                            env=jazzy_env(jazzy_domain, [reporter_site]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        body = gw.wait_for("/faults", lambda b: any(
            f["fault_code"] == "BATTERY_LOW" for f in b["items"]), timeout=60)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    fault = next(f for f in body["items"] if f["fault_code"] == "BATTERY_LOW")
    assert fault["source"] == "/power/battery", fault
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
