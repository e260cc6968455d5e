"""Operations, status and lifecycle control in process (the operations, status and
lifecycle handlers): listing, detail, service calls through the fake caller, action goals
through the fake action manager, execution errors."""

from __future__ import annotations

from typing import Any

from gateway.ros.calls.services import CallTimeout
from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import (
    ACTUATOR,
    CALIBRATE,
    FAIL_SERVICE,
    FIBONACCI,
    HOST,
    TRIGGER,
    FakeNode,
    default_nodes,
)

OPS = "/api/v1/apps/actuator/operations"


def test_operations_list_services_and_actions(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", OPS)
        assert status == 200
        items = {i["id"]: i for i in body["items"]}
        assert sorted(items) == ["brake_test", "calibrate", "self_test"]
        assert body[gw.xv] == {"total_count": 3, "entity_id": "actuator"}
        cal = items["calibrate"]
        assert (cal["type"], cal["service_type"], cal["asynchronous_execution"]) == (
            "service", TRIGGER, False)
        assert cal["schema"] == {"request": {}, "response": {"success": "bool",
                                                             "message": "string"}}
        assert cal[gw.xv]["ros2_service"] == CALIBRATE
        act = items["brake_test"]
        assert (act["type"], act["action_type"], act["asynchronous_execution"]) == (
            "action", FIBONACCI, True)
        assert act["schema"]["goal"] == {"order": "int32"}
        # the function aggregates its member apps' operations; the lidar app has none
        status, body = await gw.json("GET", "/api/v1/functions/chassis/operations")
        assert sorted(i["id"] for i in body["items"]) == ["brake_test", "calibrate",
                                                          "self_test"]
        status, body = await gw.json("GET", "/api/v1/apps/scanner/operations")
        assert (status, body["items"]) == (200, [])

    gateway(scenario)


def test_operation_detail_and_unknown_operation(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{OPS}/calibrate")
        assert status == 200 and body["item"]["id"] == "calibrate"
        assert body["item"][gw.xv]["member_ids"] == ["actuator"]
        for method, path in (("GET", f"{OPS}/nope"), ("POST", f"{OPS}/nope/executions")):
            body = await gw.error(method, path, 404, json={})
            assert body["parameters"] == {"entity_id": "actuator", "operation_id": "nope"}
            if gw.profile == "medkit":
                assert (body["error_code"], body["message"]) == ("operation-not-found",
                                                                 "Operation not found")
            else:
                assert (body["error_code"], body["message"]) == (
                    "resource-not-found", "Operation 'nope' not found on app 'actuator'")

    gateway(scenario)


def test_a_service_call_answers_its_response(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("POST", f"{OPS}/calibrate/executions", json={})
        assert status == 200
        assert body["parameters"] == {"success": True, "message": "calibrated"}
        assert body[gw.xv] == {"ros2_service": CALIBRATE, "ros2_type": TRIGGER}
        (name, type_name, _), = [c for c in gw.caller.calls if c[0] == CALIBRATE]
        assert type_name == TRIGGER

    gateway(scenario)


def test_a_failed_service_call(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", f"{OPS}/self_test/executions", 500, json={})
        assert body["error_code"] == "vendor-error"
        assert body["vendor_code"] == f"{gw.xv}-ros2-service-unavailable"
        assert body["parameters"]["ros2_service"] == FAIL_SERVICE
        assert body["parameters"]["operation_id"] == "self_test"
        if gw.profile == "medkit":
            assert body["message"] == "Service call failed"
            assert body["parameters"]["details"] == "the server went away during the call"
        else:
            assert body["message"] == "the server went away during the call"

    gateway(scenario)


def test_a_service_nobody_serves_any_more(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        del gw.caller.handlers[CALIBRATE]  # the server left between discovery and the call
        status, body = await gw.json("POST", f"{OPS}/calibrate/executions", json={})
        assert status in (500, 503), body
        assert body["error_code"] == "vendor-error"
        assert body["parameters"]["ros2_service"] == CALIBRATE

    gateway(scenario)


def test_execution_request_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for timeout in (-1, 0, 3601, "soon", True):
            body = await gw.error("POST", f"{OPS}/calibrate/executions", 400,
                                  json={"timeout": timeout})
            assert body["error_code"] == "invalid-parameter"
            assert body["message"] == "'timeout' must be a number of seconds in (0, 3600]"
            assert body["parameters"] == {"field": "timeout", "value": timeout}
        async with gw.client.post(f"{OPS}/calibrate/executions", data=b"{not json",
                                  headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 400
            assert (await resp.json())["error_code"] == "invalid-request"
        body = await gw.error("POST", f"{OPS}/brake_test/executions", 400,
                              json={"parameters": {"order": "ten"}})
        assert body["error_code"] == "invalid-request"
        assert "order" in body["message"]
        assert not [c for c in gw.caller.calls if c[0] == CALIBRATE]  # nothing was called

    gateway(scenario)


def test_executions_of_an_action(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{OPS}/brake_test/executions")
        assert status == 200 and body["items"] == []
        assert body[gw.xv] == {"total_count": 0, "entity_id": "actuator"}
        for method in ("GET", "DELETE"):
            body = await gw.error(method, f"{OPS}/brake_test/executions/abc", 404)
            assert body["error_code"] == "resource-not-found"
            if gw.profile == "medkit":
                assert body["message"] == "Execution not found"
                assert body["parameters"]["execution_id"] == "abc"
            else:
                assert body["message"].startswith(
                    "Execution 'abc' not found on operation 'brake_test' of app 'actuator'")

    gateway(scenario)


def test_app_and_component_status(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", "/api/v1/apps/actuator/status")
        assert status == 200
        assert body == {"id": "actuator", "status": "ready",
                        gw.xv: {"is_online": True, "ros2": {"node": ACTUATOR}}}
        status, body = await gw.json("GET", f"/api/v1/components/{HOST}/status")
        assert body == {"id": HOST, "status": "ready",
                        gw.xv: {"apps_total": 3, "apps_online": 3}}
        body = await gw.error("GET", "/api/v1/apps/nope/status", 404)
        assert body["parameters"]["entity_id"] == "nope"

    gateway(scenario)


def test_lifecycle_control_of_a_plain_node_is_501(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for transition in ("start", "restart", "shutdown"):
            body = await gw.error("PUT", f"/api/v1/apps/actuator/status/{transition}", 501,
                                  json={})
            assert body["error_code"] == "not-implemented"
            assert body["message"] == "Lifecycle control not available for this entity"
            assert body["parameters"]["feature"] == "lifecycle"
            assert body["parameters"]["reasons"] == ["actuator: plain node"]
        body = await gw.error("PUT", "/api/v1/apps/nope/status/start", 404, json={})
        assert body["parameters"]["entity_id"] == "nope"

    gateway(scenario)


async def _start_goal(gw: Gw, order: int) -> tuple[int, Any, str | None]:
    async with gw.client.post(f"{OPS}/brake_test/executions",
                              json={"parameters": {"order": order}}) as resp:
        return resp.status, await resp.json(), resp.headers.get("Location")


def test_an_action_goal_runs_and_completes(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body, location = await _start_goal(gw, 5)
        assert status == 202, body
        ex_id = body["id"]
        assert location == f"{OPS}/brake_test/executions/{ex_id}"
        assert (body["status"], body["capability"]) == ("running", "execute")
        assert body[gw.xv]["goal_id"] == ex_id
        assert body[gw.xv]["ros2_action"] == "/chassis/brakes/actuator/brake_test"
        assert gw.actions.goals[0].order == 5
        status, body = await gw.json("GET", f"{OPS}/brake_test/executions")
        assert [(i["id"], i["status"]) for i in body["items"]] == [(ex_id, "running")]
        gw.actions.finish(ex_id, {"sequence": [0, 1, 1, 2, 3]})
        status, body = await gw.json("GET", location)
        assert (status, body["status"]) == (200, "completed")
        assert body["result"] == {"sequence": [0, 1, 1, 2, 3]}
        assert body["parameters"] == {"sequence": [0, 1, 1, 2, 3]}

    gateway(scenario)


def test_stop_and_delete_an_execution(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        _, body, location = await _start_goal(gw, 5)
        assert location is not None
        body = await gw.error("PUT", location, 400, json={})
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == "'capability' is required; only 'stop' is supported"
        body = await gw.error("PUT", location, 400, json={"capability": "freeze"})
        assert body["message"] == ("Capability 'freeze' does not apply to a running execution; "
                                   "only 'stop' is supported")
        if gw.profile == "medkit":  # the reference: re-executing a running goal is a conflict
            body = await gw.error("PUT", location, 409, json={"capability": "execute"})
            assert body["error_code"] == "precondition-not-fulfilled"
        async with gw.client.put(location, json={"capability": "stop"}) as resp:
            assert resp.status == 202
            body = await resp.json()
        assert (body["status"], body["capability"]) == ("failed", "stop")  # CANCELED
        assert body[gw.xv]["cancel_response"] == "accepted"
        _, second, location2 = await _start_goal(gw, 3)
        assert location2 is not None
        status, _ = await gw.json("DELETE", location2)
        assert status == 204
        status, body = await gw.json("GET", location2)
        if gw.profile == "medkit":  # kept readable after the delete
            assert (status, body["status"]) == (200, "failed")
        else:  # removed
            assert status == 404

    gateway(scenario)


def test_a_rejected_goal(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body, _ = await _start_goal(gw, -1)
        if gw.profile == "medkit":
            assert status == 400, body
            assert (body["error_code"], body["vendor_code"]) == (
                "vendor-error", "x-medkit-ros2-action-rejected")
            assert body["message"] == "Goal rejected"
            assert body["parameters"]["details"] == "order must not be negative"
        else:  # 202 with an execution that failed
            assert status == 202, body
            assert body["status"] == "failed"
            assert body[gw.xv]["reason"] == "order must not be negative"

    gateway(scenario)


FIB = f"{OPS}/brake_test/executions"
SCAN_CALIBRATE = "/sensors/lidar/scanner/calibrate"


def test_bad_goal_input_names_the_field(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", FIB, 400, json={"parameters": {"order": "five"}})
        assert (body["error_code"], body["parameters"]["field"]) == ("invalid-request", "order")
        body = await gw.error("POST", FIB, 400, json={"parameters": {"ordr": 3}})
        assert body["parameters"]["field"] == "ordr"
        body = await gw.error("POST", FIB, 400, json={"order": 1 << 40})  # goal fields on top
        assert body["parameters"]["field"] == "order"
        body = await gw.error("POST", FIB, 400, json=[1])
        assert body["error_code"] == "invalid-request"
        body = await gw.error("POST", FIB, 400, json={"parameters": {"order": 2},
                                                     "timeout": -1})
        assert body["error_code"] == "invalid-parameter"
        assert gw.actions.goals == []  # nothing reached the action server

    gateway(scenario)


def test_an_execution_belongs_to_its_entity(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body, _ = await _start_goal(gw, 2)
        assert status == 202, body
        ex_id = body["id"]
        other = f"/api/v1/functions/chassis/operations/brake_test/executions/{ex_id}"
        await gw.error("GET", other, 404)
        await gw.error("PUT", other, 404, json={"capability": "stop"})
        await gw.error("DELETE", other, 404)
        status, listing = await gw.json("GET",
                                        "/api/v1/functions/chassis/operations/brake_test"
                                        "/executions")
        assert status == 200 and ex_id not in {i["id"] for i in listing["items"]}
        # started on the function, it is the function's
        async with gw.client.post("/api/v1/functions/chassis/operations/brake_test/executions",
                                  json={"parameters": {"order": 1}}) as resp:
            assert resp.status == 202
            location = resp.headers["Location"]
        assert location.startswith("/api/v1/functions/chassis/operations/brake_test/")
        status, _ = await gw.json("GET", location)
        assert status == 200
        assert gw.actions.by_id[ex_id].handle is not None  # the app's goal was not stopped

    gateway(scenario)


def _two_calibrates() -> list[FakeNode]:
    nodes = default_nodes()
    scanner = next(n for n in nodes if n.name == "scanner")
    scanner.services.append((SCAN_CALIBRATE, TRIGGER))
    return nodes


def test_ids_on_aggregating_entities(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        from std_srvs.srv import Trigger

        gw.caller.handlers[SCAN_CALIBRATE] = lambda _: Trigger.Response(
            success=True, message="lidar calibrated")
        comp = f"/api/v1/components/{HOST}/operations"
        status, body = await gw.json("GET", comp)
        by_id = {i["id"]: i for i in body["items"]}
        assert {"actuator:calibrate", "scanner:calibrate", "brake_test"} <= set(by_id)
        assert by_id["scanner:calibrate"][gw.xv]["member_ids"] == ["scanner"]
        # a qualified id executes that member's service
        status, body = await gw.json("POST", f"{comp}/scanner:calibrate/executions", json={})
        assert (status, body["parameters"]["message"]) == (200, "lidar calibrated")
        # a bare id naming two items is not enough; the full path names one
        body = await gw.error("GET", f"{comp}/calibrate", 404)
        assert sorted(body["parameters"]["candidates"]) == ["actuator:calibrate",
                                                            "scanner:calibrate"]
        status, body = await gw.json(
            "POST", f"{comp}/chassis%2Fbrakes%2Factuator%2Fcalibrate/executions", json={})
        assert (status, body["parameters"]["message"]) == (200, "calibrated")
        # the chassis function has one calibrate: bare
        status, body = await gw.json("GET", "/api/v1/functions/chassis/operations")
        assert {i["id"] for i in body["items"]} == {"calibrate", "self_test", "brake_test"}

    gateway(scenario, nodes=_two_calibrates())


def test_operation_routes_in_the_openapi_document(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, doc = await gw.json("GET", "/api/v1/docs")
        paths = doc["paths"]
        start = paths["/apps/{app_id}/operations/{op_id}/executions"]["post"]
        assert {"200", "202"} <= set(start["responses"])
        assert start[f"{gw.xv}-alternates"] is True
        assert set(paths["/functions/{function_id}/operations/{op_id}/executions/{exec_id}"]
                   ) == {"get", "put", "delete"}
        assert "get" in paths["/components/{component_id}/status"]
        # the scoped document of an operation collection is served, not an operation named docs
        status, scoped = await gw.json("GET", f"{OPS}/docs")
        assert status == 200 and "/apps/actuator/operations" in scoped["paths"]

    gateway(scenario)


def test_service_and_action_descriptions(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", OPS)
        item = next(i for i in body["items"] if i["id"] == "calibrate")
        assert (item["name"], item["proximity_proof_required"]) == ("calibrate", False)
        xv = item[gw.xv]
        assert (xv["ros2_kind"], xv["ros2_type"]) == ("service", TRIGGER)
        assert xv["type_info"]["response"]["properties"]["message"]["type"] == "string"
        status, detail = await gw.json("GET", f"{OPS}/calibrate")
        assert status == 200 and detail["item"]["schema"] == item["schema"]
        status, detail = await gw.json("GET", f"{OPS}/brake_test")
        xv = detail["item"][gw.xv]
        assert (xv["ros2_kind"], xv["ros2_type"]) == ("action", FIBONACCI)
        assert xv["ros2_action"] == "/chassis/brakes/actuator/brake_test"
        assert set(xv["type_info"]) == {"goal", "result", "feedback"}

    gateway(scenario)


# --- wire profiles (medkit-wire.md rows) -------------------------------------------------------


def test_operation_metadata_nested_and_flat(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", OPS)
        items = {i["id"]: i for i in body["items"]}
        xv = items["brake_test"][gw.xv]
        assert xv["ros2"] == {"kind": "action", "action": f"{ACTUATOR}/brake_test",
                              "type": FIBONACCI}
        assert (xv["ros2_kind"], xv["ros2_type"]) == ("action", FIBONACCI)
        assert xv["entity_id"] == "actuator" and xv["source"]
        assert set(xv["type_info"]) == {"goal", "result", "feedback"}
        status, detail = await gw.json("GET", f"{OPS}/calibrate")
        assert detail["item"][gw.xv]["ros2"]["service"] == CALIBRATE

    gateway(scenario)


SERVICE_BODIES: list[Any] = [
    None, {}, {"parameters": {}}, {"request": {}}, {"request": {}, "type": TRIGGER},
    {"type": "", "request": {}}, {"timeout": 5, "extra": [1]}, {"order": 3, "goal": None},
    {"input": {}}]
GOAL_BODIES: list[dict[str, Any]] = [
    {"parameters": {"order": 3}}, {"goal": {"order": 3}},
    {"type": FIBONACCI, "goal": {"order": 3}, "order": 40},
    {"parameters": {"order": 3}, "goal": {"order": 40}}, {"order": 3}, {"input": {"order": 3}}]


def test_service_execution_body_forms(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for body in SERVICE_BODIES:  # None: an empty request body
            kw: dict[str, Any] = ({"data": b"", "headers": {"Content-Type": "application/json"}}
                                  if body is None else {"json": body})
            status, answer = await gw.json("POST", f"{OPS}/calibrate/executions", **kw)
            assert status == 200, (body, answer)
            assert answer["parameters"]["success"] is True

    gateway(scenario)


def test_action_execution_body_forms(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for n, body in enumerate(GOAL_BODIES):
            async with gw.client.post(FIB, json=body) as resp:
                assert resp.status == 202, (body, await resp.text())
                started = await resp.json()
                location = resp.headers["Location"]
            assert started["status"] == "running" and started["id"]
            assert location == f"{FIB}/{started['id']}"
            assert gw.actions.goals[n].order == 3, body  # the goal the form names
            gw.actions.finish(started["id"], {"sequence": [0, 1, 1, 2]})
            status, done = await gw.json("GET", location)
            assert (status, done["status"]) == (200, "completed")
            assert done["parameters"]["sequence"] == [0, 1, 1, 2]
            assert done["result"] == {"sequence": [0, 1, 1, 2]}

    gateway(scenario)


def test_execution_body_errors_name_each_field(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("POST", FIB, 400, json={"goal": {"order": "x", "bogus": 1}})
        assert body["error_code"] == "invalid-request"
        assert {f["field"] for f in body["parameters"]["fields"]} == {"goal.order",
                                                                      "goal.bogus"}
        body = await gw.error("POST", FIB, 400, json={"goal": [1], "type": 7})
        assert {f["field"] for f in body["parameters"]["fields"]} == {"goal", "type"}
        body = await gw.error("POST", FIB, 400, json={"goal": {}, "type": TRIGGER})
        assert body["parameters"]["fields"][0]["field"] == "type"
        body = await gw.error("POST", FIB, 400, data=b"{nope",
                              headers={"Content-Type": "application/json"})
        assert body["error_code"] == "invalid-request"
        assert body["message"].startswith("Malformed JSON")
        assert gw.actions.goals == []

    gateway(scenario)


def test_execution_status_and_ros2_status_casing(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        _, started, location = await _start_goal(gw, 2)
        assert location is not None
        gw.actions.finish(started["id"], {"sequence": [0, 1, 1]})
        status, done = await gw.json("GET", location)
        xv = done[gw.xv]
        assert xv["ros2_status"] == {"spec": "SUCCEEDED", "medkit": "succeeded"}[gw.profile]
        assert xv["ros2"] == {"action": f"{ACTUATOR}/brake_test", "type": FIBONACCI}
        assert xv["ros2_action"] == f"{ACTUATOR}/brake_test"
        assert done["capability"] == "execute" and xv["goal_id"] == started["id"]

    gateway(scenario)


def test_execution_stop_and_execute(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        _, _, location = await _start_goal(gw, 40)
        assert location is not None
        if gw.profile == "medkit":
            body = await gw.error("PUT", location, 409, json={"capability": "execute"})
            assert body["error_code"] == "precondition-not-fulfilled"
        else:
            body = await gw.error("PUT", location, 400, json={"capability": "execute"})
            assert body["error_code"] == "invalid-parameter"
        body = await gw.error("PUT", location, 400, data=b"",  # an empty body is {}
                              headers={"Content-Type": "application/json"})
        assert body["parameters"]["fields"] == [{"field": "capability",
                                                 "message": "missing required field"}]
        async with gw.client.put(location, json={"capability": "stop"}) as resp:
            assert resp.status == 202
            stop = await resp.json()
            assert resp.headers["Location"] == location
        assert stop["id"] and stop["status"] == "failed"

    gateway(scenario)


def test_delete_execution_behaviour(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        _, started, location = await _start_goal(gw, 40)
        assert location is not None
        status, _ = await gw.json("DELETE", location)
        assert status == 204
        if gw.profile == "medkit":  # the goal stays readable, canceled
            status, body = await gw.json("GET", location)
            assert (status, body["status"]) == (200, "failed")
            assert body[gw.xv]["ros2_status"] == "canceled"
        else:  # the spec: terminated and removed
            body = await gw.error("GET", location, 404)
            assert body["error_code"] == "resource-not-found"
            assert body["parameters"]["execution_id"] == started["id"]

    gateway(scenario)


def test_a_service_call_that_times_out(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        def late(request: Any) -> Any:
            raise CallTimeout(f"{CALIBRATE} did not answer within 1e-06 s", 1e-6)

        gw.caller.handlers[CALIBRATE] = late
        if gw.profile == "medkit":
            body = await gw.error("POST", f"{OPS}/calibrate/executions", 500,
                                  json={"timeout": 1e-6})
            assert body["error_code"] == "vendor-error"
            assert body["vendor_code"] == f"{gw.xv}-ros2-service-unavailable"
            assert body["message"] == "Service call failed"
        else:
            body = await gw.error("POST", f"{OPS}/calibrate/executions", 504,
                                  json={"timeout": 1e-6})
            assert body["error_code"] == "not-responding"

    gateway(scenario)
