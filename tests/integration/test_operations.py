"""Operations against the demo robot: services, Fibonacci goals, cancel, ids on aggregates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, assert_error, enc

pytestmark = pytest.mark.integration

ROBOT_NODES = ("calibration", "lidar_sensor", "long_calibration")
FIB = "/apps/long_calibration/operations/long_calibration/executions"


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    log = tmp_path_factory.mktemp("gw") / "gateway.log"
    with Gateway(free_port(), domain, ["service_call_timeout_sec=3"], log) as g:
        g.wait_for("/apps/long_calibration/operations",
                   lambda b: any(i["id"] == "long_calibration" for i in b["items"]), timeout=20)
        g.wait_for("/apps/calibration/operations", lambda b: len(b["items"]) == 1, timeout=20)
        # every node's services, not only the first ones discovered (a loaded machine)
        g.wait_for("/apps/lidar_sensor/operations",
                   lambda b: any(i["id"] == "calibrate" for i in b["items"]), timeout=60)
        yield g


@pytest.fixture(scope="module")
def host(gw: Gateway) -> str:
    return str(gw.get("/components").json()["items"][0]["id"])


def location_path(resp: Any) -> str:
    loc = resp.headers["location"]
    assert loc.startswith("/api/v1/"), loc
    return loc[len("/api/v1"):]


def wait_execution(gw: Gateway, path: str, predicate: Any, timeout: float = 20.0) -> dict:
    return gw.wait_for(path, predicate, timeout=timeout)  # type: ignore[no-any-return]


def test_service_list_and_detail(gw: Gateway) -> None:
    body = gw.get("/apps/calibration/operations").json()
    assert body["x-vendor"] == {"total_count": 1, "entity_id": "calibration"}
    (item,) = body["items"]
    assert item["id"] == "calibrate" and item["name"] == "calibrate"
    assert item["asynchronous_execution"] is False
    assert item["proximity_proof_required"] is False
    xv = item["x-vendor"]
    assert xv["ros2_kind"] == "service"
    assert xv["ros2_service"] == "/powertrain/engine/calibrate"
    assert xv["ros2_type"] == "std_srvs/srv/Trigger"
    assert xv["type_info"]["response"]["properties"]["message"]["type"] == "string"
    assert item["schema"] == {"request": {}, "response": {"success": "bool",
                                                          "message": "string"}}
    detail = gw.get("/apps/calibration/operations/calibrate").json()
    assert detail == {"item": item}
    body = assert_error(gw.get("/apps/calibration/operations/nope"), 404, "resource-not-found")
    assert body["parameters"]["operation_id"] == "nope"


def test_action_description(gw: Gateway) -> None:
    detail = gw.get("/apps/long_calibration/operations/long_calibration").json()["item"]
    assert detail["asynchronous_execution"] is True and detail["type"] == "action"
    xv = detail["x-vendor"]
    assert xv["ros2_kind"] == "action"
    assert xv["ros2_action"] == "/powertrain/engine/long_calibration"
    assert xv["ros2_type"] == "test_msgs/action/Fibonacci"
    assert set(xv["type_info"]) == {"goal", "result", "feedback"}
    assert detail["schema"]["goal"] == {"order": "int32"}


def test_call_calibrate(gw: Gateway) -> None:
    resp = gw.request("POST", "/apps/calibration/operations/calibrate/executions", {})
    assert resp.status == 200, resp
    body = resp.json()
    assert body["parameters"] == {"success": True,
                                  "message": "engine calibrated with offset 0.0"}
    # no body at all and the `parameters` form work too
    resp = gw.request("POST", "/apps/calibration/operations/calibrate/executions")
    assert resp.status == 200 and resp.json()["parameters"]["success"] is True
    resp = gw.request("POST", "/apps/lidar_sensor/operations/calibrate/executions",
                      {"parameters": {}})
    assert resp.json()["parameters"] == {"success": True, "message": "lidar calibrated"}
    # services keep no executions
    listing = gw.get("/apps/calibration/operations/calibrate/executions").json()
    assert listing["items"] == []


def test_bad_input_names_the_field(gw: Gateway) -> None:
    body = assert_error(gw.request("POST", FIB, {"parameters": {"order": "five"}}), 400,
                        "invalid-request")
    assert body["parameters"]["field"] == "order"
    body = assert_error(gw.request("POST", FIB, {"parameters": {"ordr": 3}}), 400)
    assert body["parameters"]["field"] == "ordr"
    body = assert_error(gw.request("POST", FIB, {"order": 1 << 40}), 400)
    assert body["parameters"]["field"] == "order"
    assert_error(gw.request("POST", FIB, [1]), 400, "invalid-request")
    assert_error(gw.request("POST", FIB, {"parameters": {"order": 2}, "timeout": -1}), 400,
                 "invalid-parameter")
    assert_error(gw.request("POST", "/apps/calibration/operations/ghost/executions", {}), 404)


def test_fibonacci_runs_to_completion_with_its_result(gw: Gateway) -> None:
    resp = gw.request("POST", FIB, {"order": 5})  # the older form: goal fields at top level
    assert resp.status == 202, resp
    body = resp.json()
    path = location_path(resp)
    assert path == f"{FIB}/{body['id']}"
    assert body["status"] == "running"
    assert body["x-vendor"]["goal_id"] == body["id"]
    assert body["x-vendor"]["ros2_action"] == "/powertrain/engine/long_calibration"
    # while running, parameters hold the latest feedback
    running = wait_execution(gw, path, lambda b: "parameters" in b or b["status"] != "running")
    if running["status"] == "running":
        assert running["parameters"]["sequence"][:2] == [0, 1]
        assert running["x-vendor"]["ros2_status"] in ("ACCEPTED", "EXECUTING")
    done = wait_execution(gw, path, lambda b: b["status"] != "running")
    assert done["status"] == "completed", done
    assert done["x-vendor"]["ros2_status"] == "SUCCEEDED"
    assert done["parameters"] == {"sequence": [0, 1, 1, 2, 3, 5]}  # the result
    listing = gw.get(f"{FIB}").json()
    assert body["id"] in {i["id"] for i in listing["items"]}


def test_cancel_mid_way_then_delete(gw: Gateway) -> None:
    resp = gw.request("POST", FIB, {"parameters": {"order": 40}})
    assert resp.status == 202, resp
    path = location_path(resp)
    wait_execution(gw, path, lambda b: b["x-vendor"]["feedback_count"] >= 1)
    for capability in ("execute", "freeze", "reset", "bogus"):
        assert_error(gw.request("PUT", path, {"capability": capability}), 400,
                     "invalid-parameter")
    assert_error(gw.request("PUT", path, {}), 400, "invalid-parameter")
    stop = gw.request("PUT", path, {"capability": "stop"})
    assert stop.status == 202, stop
    assert location_path(stop) == path
    assert stop.json()["id"] == resp.json()["id"]
    assert stop.json()["x-vendor"]["cancel_response"] == "ERROR_NONE"
    done = wait_execution(gw, path, lambda b: b["status"] != "running")
    assert done["status"] == "failed" and done["x-vendor"]["ros2_status"] == "CANCELED"
    assert done["capability"] == "stop"
    assert len(done["parameters"]["sequence"]) < 41  # stopped before the end
    assert gw.request("DELETE", path).status == 204
    assert_error(gw.get(path), 404, "resource-not-found")
    assert_error(gw.request("DELETE", path), 404)


def test_delete_cancels_a_running_goal(gw: Gateway) -> None:
    resp = gw.request("POST", FIB, {"parameters": {"order": 40}})
    path = location_path(resp)
    assert gw.request("DELETE", path).status == 204
    assert_error(gw.get(path), 404)
    # the server was asked to cancel: a new goal is accepted and the old one does not linger
    again = gw.request("POST", FIB, {"parameters": {"order": 1}})
    assert again.status == 202
    done = wait_execution(gw, location_path(again), lambda b: b["status"] != "running")
    assert done["status"] == "completed"


def test_order_above_50_is_rejected_as_failed(gw: Gateway) -> None:
    resp = gw.request("POST", FIB, {"parameters": {"order": 51}})
    assert resp.status == 202, resp
    body = resp.json()
    assert body["status"] == "failed"
    assert body["x-vendor"]["ros2_status"] == "REJECTED"
    assert gw.get(location_path(resp)).json()["status"] == "failed"


def test_execution_belongs_to_its_entity(gw: Gateway) -> None:
    resp = gw.request("POST", FIB, {"parameters": {"order": 2}})
    exec_id = resp.json()["id"]
    other = f"/functions/powertrain/operations/long_calibration/executions/{exec_id}"
    assert_error(gw.get(other), 404)
    assert_error(gw.request("PUT", other, {"capability": "stop"}), 404)
    assert_error(gw.request("DELETE", other), 404)
    listing = gw.get("/functions/powertrain/operations/long_calibration/executions").json()
    assert exec_id not in {i["id"] for i in listing["items"]}
    # started on the function, it is the function's
    resp = gw.request("POST", "/functions/powertrain/operations/long_calibration/executions",
                      {"parameters": {"order": 1}})
    assert resp.status == 202
    assert location_path(resp).startswith("/functions/powertrain/operations/")
    assert gw.get(location_path(resp)).status == 200


def test_ids_on_aggregating_entities(gw: Gateway, host: str) -> None:
    items = gw.get(f"/components/{host}/operations").json()["items"]
    by_id = {i["id"]: i for i in items}
    assert {"calibration:calibrate", "lidar_sensor:calibrate", "long_calibration"} <= set(by_id)
    assert by_id["lidar_sensor:calibrate"]["x-vendor"]["member_ids"] == ["lidar_sensor"]
    # a qualified id executes that member's service
    resp = gw.request("POST", f"/components/{host}/operations/lidar_sensor:calibrate/executions")
    assert resp.json()["parameters"]["message"] == "lidar calibrated"
    # a bare id naming two items is not enough; the full path names one
    body = assert_error(gw.get(f"/components/{host}/operations/calibrate"), 404)
    assert sorted(body["parameters"]["candidates"]) == ["calibration:calibrate",
                                                        "lidar_sensor:calibrate"]
    path = enc("powertrain/engine/calibrate")
    resp = gw.request("POST", f"/components/{host}/operations/{path}/executions")
    assert resp.json()["parameters"]["message"].startswith("engine calibrated")
    # the powertrain function has one calibrate: bare
    ids = {i["id"] for i in gw.get("/functions/powertrain/operations").json()["items"]}
    assert ids == {"calibrate", "long_calibration"}


def test_call_timeout_is_504(gw: Gateway) -> None:
    # a budget no round trip can meet: the call is abandoned and answered 504
    body = assert_error(gw.request("POST", "/apps/calibration/operations/calibrate/executions",
                                   {"timeout": 1e-6}), 504, "not-responding")
    assert body["parameters"]["ros2_service"] == "/powertrain/engine/calibrate"
    # and the service still answers afterwards
    resp = gw.request("POST", "/apps/calibration/operations/calibrate/executions", {})
    assert resp.status == 200


def test_concurrent_calls_beyond_the_cap_all_answer(gw: Gateway) -> None:
    import concurrent.futures

    def call(_: int) -> int:
        return gw.request("POST", "/apps/calibration/operations/calibrate/executions", {}).status

    # a server drops requests beyond ~10 queued: the gateway's cap queues them instead
    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        statuses = list(pool.map(call, range(24)))
    assert statuses == [200] * 24, statuses


def test_operation_routes_in_the_openapi_document(gw: Gateway) -> None:
    paths = gw.get("/docs").json()["paths"]
    start = paths["/apps/{app_id}/operations/{op_id}/executions"]["post"]
    assert {"200", "202"} <= set(start["responses"]) and start["x-vendor-alternates"] is True
    assert set(paths["/functions/{function_id}/operations/{op_id}/executions/{exec_id}"]) == {
        "get", "put", "delete"}
    assert "get" in paths["/components/{component_id}/status"]
    # the scoped document of an operation collection is served, not an operation named docs
    scoped = gw.get("/apps/calibration/operations/docs")
    assert scoped.status == 200 and "/apps/calibration/operations" in scoped.json()["paths"]
