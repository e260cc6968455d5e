"""The graph provider and watchdog plugins against real demo nodes and a real gateway."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, assert_error

pytestmark = pytest.mark.integration

ROBOT_NODES = ("lidar_sensor", "temp_sensor", "temp_monitor", "rpm_sensor", "managed_lifecycle")
SCAN = "/perception/lidar/scan"


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    settings = ["plugins=[graph_provider,graph_watchdog]", f"state_dir={tmp / 'state'}",
                "plugins.graph_watchdog.warmup_cycles=2",
                "plugins.graph_watchdog.tick_interval_ms=500",
                "plugins.graph_watchdog.qos_mismatch.grace=2",
                "plugins.graph_watchdog.orphan.mode=advisory",
                "plugins.graph_watchdog.lifecycle_expectation.require_active="
                "[managed_lifecycle,temp_sensor]",
                "plugins.graph_watchdog.lifecycle_expectation.unreadable_after=3"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: len(b["items"]) >= len(ROBOT_NODES), timeout=20)
        yield g


@pytest.fixture(scope="module")
def detector(ros: Any) -> Any:
    """A perception subscriber of the lidar scan, outside the demo robot."""
    from sensor_msgs.msg import LaserScan

    node = ros.node("obstacle_detector", "/perception")
    node.create_subscription(LaserScan, SCAN, lambda _m: None, 10)
    return node


def graph(gw: Gateway, fid: str) -> dict[str, Any]:
    resp = gw.get(f"/functions/{fid}/x-vendor-graph")
    assert resp.status == 200, resp
    return resp.json()["x-vendor-graph"]  # type: ignore[no-any-return]


def test_watchdog_raises_the_demo_qos_mismatch(gw: Gateway) -> None:
    codes = gw.wait_for("/faults", lambda b: any(f["fault_code"] == "GRAPH_QOS_MISMATCH"
                                                 for f in b["items"]), timeout=40)
    fault = next(f for f in codes["items"] if f["fault_code"] == "GRAPH_QOS_MISMATCH")
    assert fault["severity"] == "ERROR"  # incompatible with the only publisher
    assert "/powertrain/engine/temp_monitor" in fault["message"]
    assert "/powertrain/engine/rpm" in fault["message"]
    assert "TRANSIENT_LOCAL" in fault["message"]
    status = gw.wait_for("/x-vendor-watchdog",
                         lambda b: b["x-vendor-watchdog"]["global_state"] == "armed")
    body = status["x-vendor-watchdog"]
    assert body["schema_version"] == "1.0.0" and body["warmup_cycles"] == 2
    assert {e["id"] for e in body["entities"]} >= set(ROBOT_NODES)
    assert all(e["armed"] and e["state"] == "armed" for e in body["entities"])
    findings = body["detectors"]["qos_mismatch"]["findings"]
    assert [f["key"] for f in findings] == ["/powertrain/engine/rpm|"
                                           "/powertrain/engine/temp_monitor"]
    assert body["detectors"]["orphan"]["mode"] == "advisory"
    assert not any(f["fault_code"] == "GRAPH_ORPHAN" for f in codes["items"])


def test_powertrain_graph_shape(gw: Gateway) -> None:
    doc = gw.wait_for("/functions/powertrain/x-vendor-graph", lambda b: all(
        e["metrics"]["metrics_status"] == "active" and e["metrics"]["frequency_hz"]
        for e in b["x-vendor-graph"]["edges"]) and b["x-vendor-graph"]["edges"],
        timeout=30)["x-vendor-graph"]
    assert doc["schema_version"] == "2.0.0" and doc["graph_id"] == "powertrain-graph"
    assert doc["scope"] == {"type": "function", "entity_id": "powertrain"}
    topics = {t["topic_id"]: t["name"] for t in doc["topics"]}
    assert sorted(topics.values()) == ["/powertrain/engine/rpm",
                                       "/powertrain/engine/temperature"]
    edges = {(e["source"], e["target"], topics[e["topic_id"]]) for e in doc["edges"]}
    assert edges == {("rpm_sensor", "temp_monitor", "/powertrain/engine/rpm"),
                     ("temp_sensor", "temp_monitor", "/powertrain/engine/temperature")}
    temp = next(e for e in doc["edges"] if e["source"] == "temp_sensor")["metrics"]
    assert 0.5 <= temp["frequency_hz"] <= 8.0  # published at 2 Hz
    assert temp["latency_ms"] is not None and temp["latency_ms"] < 5000  # header stamp
    assert temp["publisher_count"] == 1 and "rate_ambiguous" not in temp
    assert temp["source"] == "/powertrain/engine/temp_sensor"
    assert doc["pipeline_status"] == "healthy" and doc["bottleneck_edge"] is None
    assert {n["node_status"] for n in doc["nodes"]} == {"reachable"}


def test_cyclic_subscription_streams_the_graph(gw: Gateway) -> None:
    from tests.integration.test_push_support import Stream

    gw.wait_for("/functions/powertrain/x-vendor-graph",
                lambda b: b["x-vendor-graph"]["edges"], timeout=30)
    resource = "/api/v1/functions/powertrain/x-vendor-graph"
    resp = gw.request("POST", "/functions/powertrain/cyclic-subscriptions",
                      {"resource": resource, "interval": "normal", "duration": 60})
    assert resp.status == 201, resp
    sub = resp.json()
    stream = Stream(gw.port, sub["event_source"])
    try:
        assert stream.status == 200, stream.body
        frames = stream.collect(3, timeout=30)
    finally:
        stream.close()
    for frame in frames:
        payload = frame["data"]["payload"]
        assert payload["id"] == "x-vendor-graph"
        doc = payload["data"]["x-vendor-graph"]
        assert doc["graph_id"] == "powertrain-graph" and doc["pipeline_status"]
        assert {e["source"] for e in doc["edges"]} == {"rpm_sensor", "temp_sensor"}
    # the client went away: the subscription ended with it
    path = f"/functions/powertrain/cyclic-subscriptions/{sub['id']}"
    deadline = time.monotonic() + 15
    while gw.get(path).status != 404:
        assert time.monotonic() < deadline, "the subscription outlived its client"
        time.sleep(0.1)
    # the sampler serves functions only; other entity types get no frames, and a collection
    # no plugin samples is refused at create
    bad = gw.request("POST", "/functions/powertrain/cyclic-subscriptions",
                     {"resource": "/api/v1/functions/powertrain/x-vendor-nothing",
                      "interval": "normal", "duration": 60})
    assert_error(bad, 400, "vendor-error", "x-vendor-collection-not-available")


def test_unknown_function_is_404(gw: Gateway) -> None:
    assert_error(gw.get("/functions/nowhere/x-vendor-graph"), 404, "resource-not-found")


def test_perception_edge_rate_then_broken(gw: Gateway, robot: Robot, detector: Any) -> None:
    doc = gw.wait_for("/functions/perception/x-vendor-graph", lambda b: any(
        e["metrics"]["metrics_status"] == "active" and e["metrics"]["frequency_hz"]
        for e in b["x-vendor-graph"]["edges"]), timeout=30)["x-vendor-graph"]
    edge = next(e for e in doc["edges"] if e["target"] == "obstacle_detector")
    assert edge["source"] == "lidar_sensor"
    assert 1.0 <= edge["metrics"]["frequency_hz"] <= 20.0  # the lidar scans at 5 Hz
    assert doc["pipeline_status"] == "healthy"
    # the publisher stops: its edge goes stale and the pipeline is broken
    robot.procs["lidar_sensor"].send_signal(signal.SIGINT)
    robot.procs["lidar_sensor"].wait(15)
    doc = gw.wait_for("/functions/perception/x-vendor-graph",
                      lambda b: b["x-vendor-graph"]["pipeline_status"] == "broken",
                      timeout=40)["x-vendor-graph"]
    edge = next(e for e in doc["edges"] if e["target"] == "obstacle_detector")
    assert edge["metrics"]["metrics_status"] == "error"
    assert edge["metrics"]["error_reason"] == "metrics_stale"
    assert edge["metrics"]["frequency_hz"] is None
    gw.wait_for("/functions/perception/x-vendor-graph", lambda b: any(
        n["entity_id"] == "lidar_sensor" and n["node_status"] == "unreachable"
        and "last_seen" in n for n in b["x-vendor-graph"]["nodes"]), timeout=40)


def test_parameter_drift_is_raised_for_changes_from_outside_only(gw: Gateway, ros: Any) -> None:
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    gw.wait_for("/x-vendor-watchdog", lambda b: any(
        e["id"] == "temp_sensor" and e["armed"] for e in b["x-vendor-watchdog"]["entities"]))
    # the gateway's own change is the new baseline, not a drift
    resp = gw.request("PUT", "/apps/temp_sensor/configurations/temp_step", {"value": 0.75})
    assert resp.status == 200, resp
    # a change from outside the gateway is one
    node = ros.node("param_tweaker")
    request = SetParameters.Request(parameters=[Parameter(name="min_temp", value=ParameterValue(
        type=ParameterType.PARAMETER_DOUBLE, double_value=84.0))])
    result = ros.call(node, SetParameters, "/powertrain/engine/temp_sensor/set_parameters",
                      request)
    assert result.results[0].successful
    faults = gw.wait_for("/faults", lambda b: any(f["fault_code"] == "GRAPH_PARAM_DRIFT"
                                                  for f in b["items"]), timeout=30)
    fault = next(f for f in faults["items"] if f["fault_code"] == "GRAPH_PARAM_DRIFT")
    assert fault["severity"] == "WARN"
    assert "/powertrain/engine/temp_sensor parameter min_temp is 84.0" in fault["message"]
    held = gw.get("/x-vendor-watchdog").json()["x-vendor-watchdog"]["detectors"]["param_drift"]
    assert [f["key"] for f in held["findings"]] == ["/powertrain/engine/temp_sensor|min_temp"]
    # set back through the gateway: the detector holds nothing any more
    for name, value in (("min_temp", 85.0), ("temp_step", 0.5)):
        assert gw.request("PUT", f"/apps/temp_sensor/configurations/{name}",
                          {"value": value}).status == 200
    gw.wait_for("/x-vendor-watchdog", lambda b: not b["x-vendor-watchdog"]["detectors"]
                ["param_drift"]["findings"], timeout=30)


def test_lifecycle_expectation(gw: Gateway) -> None:
    faults = gw.wait_for("/faults", lambda b: any(f["fault_code"] == "GRAPH_NODE_NOT_MANAGED"
                                                  for f in b["items"]), timeout=30)
    fault = next(f for f in faults["items"] if f["fault_code"] == "GRAPH_NODE_NOT_MANAGED")
    assert "/powertrain/engine/temp_sensor" in fault["message"]
    assert "managed_lifecycle" not in fault["message"]
    body = gw.get("/x-vendor-watchdog").json()["x-vendor-watchdog"]
    states = {e["id"]: e["lifecycle"] for e in body["entities"]}
    assert isinstance(states["managed_lifecycle"], str)  # its GetState answers
    assert states["temp_sensor"] is None
