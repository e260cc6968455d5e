"""Configurations in process (the configurations handlers): the real ParameterStore over the
fake nodes' parameter services; reads, writes, resets and their errors in both profiles."""

from __future__ import annotations

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import (
    ACTUATOR,
    HOST,
    MONITOR,
    STRING_T,
    FakeNode,
    FakeParam,
    default_nodes,
)

CFG = "/api/v1/apps/actuator/configurations"


def _param(gw: Gw, fqn: str, name: str) -> object:
    node = next(n for n in gw.nodes if n.fqn == fqn)
    assert node.params is not None
    return node.params[name].value


def test_list_an_apps_parameters(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", CFG)
        assert status == 200
        items = {i["id"]: i for i in body["items"]}
        assert sorted(items) == ["max_pressure", "mode", "serial"]
        mp = items["max_pressure"]
        assert (mp["value"], mp["data"], mp["description"]) == (80.0, 80.0, "bar")
        assert mp[gw.xv]["ros2"] == {"node": ACTUATOR, "parameter": "max_pressure",
                                     "type": "double"}
        assert items["serial"][gw.xv]["read_only"] is True
        assert body[gw.xv]["total_count"] == 3
        assert body[gw.xv]["aggregation_level"] == "app"
        # a node without parameter services has none
        status, body = await gw.json("GET", "/api/v1/apps/scanner/configurations")
        assert (status, body["items"], body[gw.xv]["total_count"]) == (200, [], 0)

    gateway(scenario)


def test_a_function_qualifies_ids_by_app(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", "/api/v1/functions/chassis/configurations")
        assert status == 200
        ids = sorted(i["id"] for i in body["items"])
        assert ids == ["actuator:max_pressure", "actuator:mode", "actuator:serial",
                       "monitor:threshold"]
        # a bare name one member has resolves; the qualified id too
        for pid in ("threshold", "monitor:threshold"):
            status, body = await gw.json("GET", f"/api/v1/functions/chassis/configurations/{pid}")
            assert status == 200
            assert (body["id"], body["value"]) == ("monitor:threshold", 5)
            assert body[gw.xv]["source_app"] == "monitor"

    gateway(scenario)


def test_read_one_and_an_unknown_one(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{CFG}/mode")
        assert status == 200 and (body["id"], body["value"]) == ("mode", "auto")
        body = await gw.error("GET", f"{CFG}/nope", 404)
        assert body["error_code"] == "resource-not-found"
        assert body["parameters"]["entity_id"] == "actuator"
        assert body["parameters"]["id"] == "nope"
        assert body["message"] == f"node {ACTUATOR} has no parameter 'nope'"

    gateway(scenario)


def test_write_then_reset(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("PUT", f"{CFG}/max_pressure", json={"data": 90.5})
        assert status == 200
        assert (body["value"], body[gw.xv]["default_value"]) == (90.5, 80.0)
        assert _param(gw, ACTUATOR, "max_pressure") == 90.5  # the node holds it
        status, body = await gw.json("PUT", f"{CFG}/mode", json={"value": "manual"})
        assert status == 200 and _param(gw, ACTUATOR, "mode") == "manual"
        status, _ = await gw.json("DELETE", f"{CFG}/max_pressure")
        assert status == 204 and _param(gw, ACTUATOR, "max_pressure") == 80.0
        assert _param(gw, ACTUATOR, "mode") == "manual"  # one reset leaves the others
        status, body = await gw.json("DELETE", CFG)
        assert status == 204, body
        assert _param(gw, ACTUATOR, "mode") == "auto"

    gateway(scenario)


def test_write_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", f"{CFG}/max_pressure", 400, json={"data": "high"})
        assert body["error_code"] == "invalid-request"
        assert body["message"] == ("Invalid value for parameter 'max_pressure': "
                                   "cannot convert 'high' to double")
        assert body["parameters"]["fields"] == [
            {"field": "data", "message": "cannot convert 'high' to double"}]
        body = await gw.error("PUT", f"{CFG}/mode", 400, json={})
        assert body["error_code"] == "invalid-request"
        assert body["message"] == "Request body must contain a 'data' field (or 'value')"
        body = await gw.error("PUT", f"{CFG}/nope", 404, json={"data": 1})
        assert body["parameters"]["id"] == "nope"
        assert _param(gw, ACTUATOR, "max_pressure") == 80.0

    gateway(scenario)


def test_a_read_only_parameter(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        if gw.profile == "medkit":
            body = await gw.error("PUT", f"{CFG}/serial", 403, json={"data": "X"})
            assert body["error_code"] == "vendor-error"
            assert body["vendor_code"] == "x-medkit-ros2-parameter-read-only"
            assert body["message"] == "Parameter is read-only"
            assert body["parameters"]["details"] == "parameter 'serial' is read-only"
        else:
            body = await gw.error("PUT", f"{CFG}/serial", 400, json={"data": "X"})
            assert body["error_code"] == "invalid-request"
            assert body["message"] == (f"Node {ACTUATOR} refused the value: "
                                       "parameter 'serial' is read-only")
            assert body["parameters"]["reason"] == "parameter 'serial' is read-only"
        assert body["parameters"]["entity_id"] == "actuator"
        assert _param(gw, ACTUATOR, "serial") == "BX-7"

    gateway(scenario)


def test_a_node_that_does_not_answer(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        next(n for n in gw.nodes if n.fqn == MONITOR).online = False
        body = await gw.error("GET", "/api/v1/apps/monitor/configurations/threshold", 503)
        assert body["error_code"] == "vendor-error"
        assert body["vendor_code"] == f"{gw.xv}-ros2-node-unavailable"
        # the function answers what the other member has, marking the partial answer
        status, body = await gw.json("GET", "/api/v1/functions/chassis/configurations")
        assert status == 200, body
        assert sorted(i["id"] for i in body["items"]) == [
            "actuator:max_pressure", "actuator:mode", "actuator:serial"]
        assert MONITOR in str(body[gw.xv])

    gateway(scenario)


def _nodes_with_rules() -> list[FakeNode]:
    """The default robot; the actuator refuses a max_pressure <= 0 (the node's own check)
    and the monitor has a `mode` too (a bare id two members share)."""
    nodes = default_nodes()
    actuator, monitor = nodes[0], nodes[1]
    assert actuator.params is not None and monitor.params is not None
    actuator.params["max_pressure"].refuse = (
        lambda v: "max_pressure must be > 0" if v <= 0 else "")
    monitor.params["mode"] = FakeParam(STRING_T, "watch")
    return nodes


def test_values_convert_to_the_parameters_type(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("PUT", f"{CFG}/max_pressure", json={"value": 70})
        assert (status, body["value"]) == (200, 70.0)  # int -> double
        status, body = await gw.json("PUT", f"{CFG}/max_pressure", json={"value": "99.5"})
        assert (status, body["value"]) == (200, 99.5)  # string -> double
        status, body = await gw.json("GET", f"{CFG}/max_pressure")
        assert body["value"] == 99.5 and _param(gw, ACTUATOR, "max_pressure") == 99.5
        status, body = await gw.json("PUT", "/api/v1/apps/monitor/configurations/threshold",
                                     json={"value": "7"})
        assert (status, body["value"]) == (200, 7)  # string -> integer

    gateway(scenario)


def test_reset_all_restores_every_default(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        await gw.json("GET", CFG)  # the defaults are the values first seen
        for name, value in (("max_pressure", 60.0), ("mode", "manual")):
            status, _ = await gw.json("PUT", f"{CFG}/{name}", json={"value": value})
            assert status == 200
        status, _ = await gw.json("DELETE", CFG)
        assert status == 204
        status, body = await gw.json("GET", CFG)
        assert {i["id"]: i["value"] for i in body["items"]} == {
            "max_pressure": 80.0, "mode": "auto", "serial": "BX-7"}

    gateway(scenario)


def test_set_errors_name_the_field_and_the_nodes_reason(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", f"{CFG}/max_pressure", 400, json={"value": "hot"})
        assert body["error_code"] == "invalid-request"
        assert body["parameters"]["field"] == "value" and "double" in body["message"]
        for bad in ({"value": [1]}, {"valu": 1}):
            body = await gw.error("PUT", f"{CFG}/max_pressure", 400, json=bad)
            assert body["error_code"] == "invalid-request"
        # the node's own validation: its reason is passed on
        body = await gw.error("PUT", f"{CFG}/max_pressure", 400, json={"value": 0})
        assert "max_pressure must be > 0" in body["message"]
        assert _param(gw, ACTUATOR, "max_pressure") == 80.0

    gateway(scenario, nodes=_nodes_with_rules())


def test_a_component_answers_partially_without_a_silent_node(gateway: Runner) -> None:
    comp = f"/api/v1/components/{HOST}/configurations"

    async def scenario(gw: Gw) -> None:
        next(n for n in gw.nodes if n.fqn == MONITOR).online = False
        status, body = await gw.json("GET", comp)
        assert status == 200, body
        xv = body[gw.xv]
        assert xv["partial"] is True and xv["unavailable_nodes"] == [MONITOR]
        assert "failed_nodes" not in xv
        assert sorted(i["id"] for i in body["items"]) == [
            "actuator:max_pressure", "actuator:mode", "actuator:serial"]
        # the app alone: its node's failure is the answer; the silent node is negatively
        # cached, so it is not asked (and waited for) again
        asked = len(gw.caller.calls)
        body = await gw.error("GET", "/api/v1/apps/monitor/configurations", 503)
        assert body["error_code"] == "vendor-error"
        assert body["vendor_code"] == f"{gw.xv}-ros2-node-unavailable"
        assert "recently" in body["message"] and body["parameters"]["node"] == MONITOR
        assert not any(name.startswith(MONITOR) for name, _, _ in gw.caller.calls[asked:])
        # qualified and bare ids on the component
        status, body = await gw.json("GET", f"{comp}/actuator:max_pressure")
        assert (status, body["id"], body["value"]) == (200, "actuator:max_pressure", 80.0)
        status, body = await gw.json("GET", f"{comp}/serial")
        assert (status, body["id"]) == (200, "actuator:serial")
        status, body = await gw.json("PUT", f"{comp}/actuator:max_pressure", json={"value": 2})
        assert (status, body["value"]) == (200, 2.0)
        # reset-all over the component; the body says what was reset
        if gw.profile == "medkit":  # the reference: 207 whenever a node's reset failed
            status, body = await gw.json("DELETE", comp)
            assert status == 207, body
            got = {r["app_id"]: r["success"] for r in body["results"]}
            assert got == {"actuator": True, "monitor": False}
            items = body["items"]
        else:  # a local member that was not reset is the error (207: another gateway's)
            body = await gw.error("DELETE", comp, 503)
            assert body["vendor_code"] == f"{gw.xv}-ros2-node-unavailable"
            assert "monitor" in body["message"]
            items = body["parameters"]["items"]
        assert {i["id"]: i["status"] for i in items} == {"actuator": 204, "monitor": 503}
        assert _param(gw, ACTUATOR, "max_pressure") == 80.0

    gateway(scenario, settings=("parameter_negative_cache_sec=60",))


def test_a_bare_id_two_members_share(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"/api/v1/components/{HOST}/configurations/mode", 404)
        assert body["error_code"] == "resource-not-found"
        assert sorted(body["parameters"]["candidates"]) == ["actuator:mode", "monitor:mode"]
        status, body = await gw.json("GET", f"/api/v1/components/{HOST}/configurations/"
                                            "monitor:mode")
        assert (status, body["value"]) == (200, "watch")

    gateway(scenario, nodes=_nodes_with_rules())


# --- wire profiles (medkit-wire.md rows) -------------------------------------------------------


def test_configuration_list_parameters(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", CFG)
        xv = body[gw.xv]
        assert xv["entity_id"] == "actuator"
        params = {p["name"]: p for p in xv["parameters"]}
        assert set(params) == {"max_pressure", "mode", "serial"}
        mp = params["max_pressure"]
        assert mp["value"] == 80.0 and mp["type"] == "double"
        assert mp[gw.xv] == {"source": "actuator", "node": ACTUATOR}
        item = next(i for i in body["items"] if i["id"] == "max_pressure")
        assert item["value"] == 80.0 and item["type"] == "parameter"  # the spec's item stays

    gateway(scenario)


def test_configuration_get_value(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{CFG}/max_pressure")
        assert body["id"] == "max_pressure" and body["value"] == body["data"] == 80.0
        xv = body[gw.xv]
        assert xv["parameter"]["name"] == "max_pressure" and xv["parameter"]["value"] == 80.0
        assert xv["parameter"]["type"] == "double" and xv["parameter"]["read_only"] is False
        assert xv["ros2"]["node"] == ACTUATOR
        assert xv["entity_id"] == "actuator" and xv["source"] == "runtime"

    gateway(scenario)


def test_configuration_put_accepts_data_and_value(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for key in ("data", "value"):
            for value in (0.75, 0.5):
                status, body = await gw.json("PUT", f"{CFG}/max_pressure", json={key: value})
                assert status == 200, body
                assert body["data"] == body["value"] == value
                assert body[gw.xv]["parameter"]["value"] == value
                assert _param(gw, ACTUATOR, "max_pressure") == value

    gateway(scenario)


def test_configuration_put_without_value_names_data(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", f"{CFG}/max_pressure", 400, json={"valeu": 1.0})
        assert body["error_code"] == "invalid-request" and "data" in body["message"]
        assert body["parameters"]["fields"][0]["field"] == "data"
        body = await gw.error("PUT", f"{CFG}/max_pressure", 400, json={"data": "warm"})
        assert body["parameters"]["fields"][0]["field"] == "data"

    gateway(scenario)


def test_configuration_errors_name_the_node_and_entity(gateway: Runner) -> None:
    comp = f"/api/v1/components/{HOST}/configurations"

    async def scenario(gw: Gw) -> None:
        next(n for n in gw.nodes if n.fqn == MONITOR).online = False
        body = await gw.error("GET", "/api/v1/apps/monitor/configurations", 503)
        assert body["vendor_code"] == f"{gw.xv}-ros2-node-unavailable"
        assert body["parameters"]["entity_id"] == "monitor"
        if gw.profile == "spec":  # 207 only names members of other gateways
            body = await gw.error("DELETE", comp, 503)
            assert body["error_code"] == "vendor-error"
            assert body["parameters"]["node"] == MONITOR
            return
        status, body = await gw.json("DELETE", comp)
        assert status == 207, body
        assert body["entity_id"] == HOST and body["items"]
        by_app = {r["app_id"]: r for r in body["results"]}
        assert by_app["monitor"]["success"] is False and by_app["monitor"]["node"] == MONITOR
        assert by_app["actuator"]["success"] is True

    gateway(scenario)
