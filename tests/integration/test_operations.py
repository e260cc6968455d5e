"""Operations against the demo robot: service calls, Fibonacci goals, cancel, timeouts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, assert_error

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


def location_path(resp: Any) -> str:
    loc = resp.headers["location"]
    assert loc.startswith("/api/v1/"), loc
    return loc[len("/api/v1"):]


def wait_execution(gw: Gateway, path: str, predicate: Any, timeout: float = 20.0) -> dict:
    return gw.wait_for(path, predicate, timeout=timeout)  # type: ignore[no-any-return]


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

