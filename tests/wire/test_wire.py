"""Wire profiles (pure): serializers per profile, lenient bodies, id checks, the setting."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.errors import ApiError
from gateway.faults.model import CONFIRMED, ERROR, FaultRecord
from gateway.model.entities import Entity, EntitySet
from gateway.model.ids import invalid_id_reason
from gateway.settings import config
from gateway.wire.bodies import (
    build_message,
    check_type_override,
    configuration_value,
    data_message,
    execution_request,
    parse_object,
)
from tests.wire_bundle import make_wire

NS = 1_700_000_000_000_000_000


def fault() -> FaultRecord:
    return FaultRecord(code="C", severity=ERROR, description="broken", status=CONFIRMED,
                       counter=-1, occurrence_count=3, first_ns=NS, last_ns=NS + 2 * 10**9,
                       sources=["/ns/node"])


def error(fn: Any, *args: Any) -> ApiError:
    with pytest.raises(ApiError) as err:
        fn(*args)
    return err.value


# --- the setting ---------------------------------------------------------------------------


def test_profile_setting_and_its_vendor_word() -> None:
    assert config.load()["api.profile"] == "spec"
    assert config.load(None, ["api.profile=medkit"]).vendor == "medkit"
    assert config.load(None, ["api.profile=medkit", "api.vendor=acme"]).vendor == "acme"
    assert config.load(None, ["api.vendor=acme"])["api.profile"] == "spec"
    with pytest.raises(config.ConfigError, match="api.profile"):
        config.load(None, ["api.profile=other"])
    with pytest.raises(ValueError, match="other"):
        make_wire("other", "vendor")


# --- faults --------------------------------------------------------------------------------


@pytest.mark.parametrize(("profile", "severity"), [("spec", "ERROR"), ("medkit", 2)])
def test_fault_item_severity_conflict_and_coexisting_fields(profile: str, severity: Any) -> None:
    wire = make_wire(profile, "vendor")
    item = wire.faults.list_item(fault())
    assert item["severity"] == severity  # the one CONFLICT row
    assert item["severity_label"] == "ERROR" and item["description"] == "broken"
    assert item["message"] == "broken" and item["source"] == "/ns/node"
    assert item["first_occurred"] == NS / 1e9 and item["last_occurred"] == NS / 1e9 + 2
    assert item["status"] == CONFIRMED and item["occurrence_count"] == 3
    assert item["reporting_sources"] == ["/ns/node"] and "last_passed" not in item
    assert item["timestamp"].endswith("Z")
    assert wire.faults.list_vendor(4) == {"total_count": 4, "count": 4}
    assert wire.faults.detail(fault(), [])["x-vendor"]["status_raw"] == CONFIRMED


def test_fault_event_per_profile() -> None:
    spec = make_wire("spec", "vendor").faults.event("fault_confirmed", fault(), NS, ("app", "a"))
    ref = make_wire("medkit", "medkit").faults.event("fault_confirmed", fault(), NS, ("app", "a"))
    assert spec["timestamp"].endswith("Z") and spec["x-vendor"]["entity_type"] == "app"
    assert ref["timestamp"] == NS / 1e9 and ref["x-medkit"]["entity_type"] == "apps"
    assert ref["fault"]["severity"] == 2 and spec["fault"]["severity"] == "ERROR"


def test_fault_list_vendor_scope() -> None:
    wire = make_wire("spec", "vendor").faults
    app = Entity("apps", "a", "a", node_fqn="/ns/a")
    assert wire.list_vendor(1, app)["source_id"] == "/ns/a"
    comp = Entity("components", "host", "host", hosts=["a"])
    es = EntitySet(apps={"a": app}, components={"host": comp})
    assert wire.list_vendor(1, comp, es) == {
        "total_count": 1, "count": 1, "entity_id": "host", "aggregation_level": "component",
        "aggregated": True, "aggregation_sources": ["a"], "app_count": 1}
    bad = wire.bad_status_filter("nope")
    assert bad.status == 400 and bad.message == "Invalid status parameter value"
    assert "healed" in bad.parameters["allowed_values"]  # type: ignore[index]


# --- entity errors -------------------------------------------------------------------------


def test_entity_errors_per_profile() -> None:
    spec, ref = make_wire("spec", "vendor").errors, make_wire("medkit", "medkit").errors
    assert spec.unknown_entity("apps", "x").error_code == "resource-not-found"
    err = ref.unknown_entity("apps", "x")
    assert (err.status, err.error_code, err.message) == (404, "entity-not-found",
                                                         "Entity not found")
    assert spec.wrong_entity_type("components", "x", "apps").status == 404
    err = ref.wrong_entity_type("components", "x", "apps")
    assert err.status == 400 and err.parameters == {
        "entity_id": "x", "expected_type": "Component", "actual_type": "App"}
    assert spec.operation_not_found("a", "op", "m").error_code == "resource-not-found"
    assert ref.operation_not_found("a", "op", "m").error_code == "operation-not-found"
    for wire in (spec, ref):
        err = wire.invalid_entity_id("a;b", "why")
        assert err.status == 400 and err.error_code == "invalid-parameter"
        assert err.parameters == {"details": "why", "entity_id": "a;b"}


def test_invalid_id_reason() -> None:
    assert invalid_id_reason("temp_sensor-2") is None
    assert "';'" in str(invalid_id_reason("app;drop"))
    assert "0x0A" in str(invalid_id_reason("a\nb"))
    assert "too long" in str(invalid_id_reason("a" * 257))
    assert "empty" in str(invalid_id_reason(""))


# --- bodies --------------------------------------------------------------------------------

FIB = ("order",)


@pytest.mark.parametrize(("body", "kind", "fields", "override"), [
    ({}, "action", {}, None),
    ({"parameters": {"order": 3}, "timeout": 2}, "action", {"order": 3}, None),
    ({"goal": {"order": 3}, "type": "test_msgs/action/Fibonacci"}, "action", {"order": 3},
     "test_msgs/action/Fibonacci"),
    ({"parameters": {"order": 3}, "goal": {"order": 9}}, "action", {"order": 3}, None),
    ({"type": "", "goal": {"order": 3}, "order": 5}, "action", {"order": 3}, None),
    ({"request": {}, "type": "std_srvs/srv/Trigger"}, "service", {}, "std_srvs/srv/Trigger"),
    ({"goal": {"order": 3}}, "service", {}, None),  # a service ignores `goal`
    ({"parameters": None, "request": {"order": 1}}, "service", {"order": 1}, None),
    ({"order": 4, "input": 7, "timeout": 3}, "action", {"order": 4}, None),  # older form
    ({"input": {"order": 6}}, "action", {"order": 6}, None),  # a newer web client's form
    ({"input": {"order": 6}, "goal": {"order": 2}}, "action", {"order": 2}, None),
])
def test_execution_request_forms(body: dict[str, Any], kind: str, fields: dict[str, Any],
                                 override: str | None) -> None:
    assert execution_request(body, kind, FIB) == (fields, override)


def test_execution_request_errors_name_each_field() -> None:
    err = error(execution_request, {"parameters": [1], "type": 5}, "action", FIB)
    assert err.status == 400 and err.error_code == "invalid-request"
    assert {f["field"] for f in err.parameters["fields"]} == {"type", "parameters"}  # type: ignore[index]
    # a message with a `type` field keeps it as a field in the older form
    assert execution_request({"type": 3}, "service", ("type",)) == ({"type": 3}, None)


def test_type_override_must_match() -> None:
    check_type_override(None, "test_msgs/action/Fibonacci")
    check_type_override("test_msgs/Fibonacci", "test_msgs/action/Fibonacci")
    err = error(check_type_override, "std_srvs/srv/Trigger", "test_msgs/action/Fibonacci")
    assert err.parameters["fields"][0]["field"] == "type"  # type: ignore[index]


def test_build_message_names_every_bad_field() -> None:
    from sensor_msgs.msg import Temperature

    err = error(build_message, Temperature, {"temperature": "hot", "variance": [1],
                                              "header": {"frame_id": "x"}}, "data")
    named = sorted(f["field"] for f in err.parameters["fields"])  # type: ignore[index]
    assert named == ["data.temperature", "data.variance"]
    assert "Request body validation failed" in err.message
    msg = build_message(Temperature, {"temperature": 1.5})
    assert msg.temperature == 1.5


def test_parse_object() -> None:
    assert parse_object(b"") == {} and parse_object(b"  ") == {}
    assert error(parse_object, b"", False).status == 400
    err = error(parse_object, b"{nope")
    assert err.message.startswith("Malformed JSON") and "not valid JSON" in err.message
    assert error(parse_object, b"[1]").parameters["fields"][0]["message"].startswith(  # type: ignore[index]
        "expected object")


def test_configuration_value_prefers_data() -> None:
    assert configuration_value({"data": 1, "value": 2}) == 1
    assert configuration_value({"value": 2}) == 2
    assert configuration_value({"data": None}) is None  # null is a legal free-form value
    err = error(configuration_value, {"valu": 1})
    assert "'data'" in err.message and err.parameters["fields"][0]["field"] == "data"  # type: ignore[index]


def test_data_message_envelope_and_bare() -> None:
    assert data_message({"type": "std_msgs/msg/Bool", "data": {"data": True}}) == (
        {"data": True}, "std_msgs/msg/Bool")
    assert data_message({"data": True}) == ({"data": True}, None)  # bare std_msgs/Bool
    assert data_message({"value": {"type": "std_msgs/msg/Bool", "data": {"data": True}}}) == (
        {"data": True}, "std_msgs/msg/Bool")
    assert data_message({"value": 3}) == ({"value": 3}, None)  # bare, a field named value
    assert data_message({"type": 3, "data": 1}) == ({"type": 3, "data": 1}, None)
    err = error(data_message, {"type": "Bool", "data": {}})
    assert err.error_code == "invalid-parameter" and err.message == "Invalid message type format"
    assert error(data_message, {"type": "std_msgs/msg/Bool", "data": 1}).status == 400


# --- other serializers ---------------------------------------------------------------------


class _Op:
    id, kind, path, type, member_ids, name = ("go", "action", "/ns/go",
                                              "test_msgs/action/Fibonacci", ["a"], "go")


@pytest.mark.parametrize("profile", ["spec", "medkit"])
def test_operation_item_nested_and_flat(profile: str) -> None:
    wire = make_wire(profile, "vendor")
    xv = wire.operations.item(_Op(), "a")["x-vendor"]
    assert xv["ros2_kind"] == "action" and xv["ros2_action"] == "/ns/go"
    assert xv["ros2"] == {"kind": "action", "action": "/ns/go",
                          "type": "test_msgs/action/Fibonacci"}
    assert xv["entity_id"] == "a"
    assert wire.operations.keep_after_delete is (profile == "medkit")
    refused = wire.operations.capability_refused("execute", "x")
    assert refused.status == (409 if profile == "medkit" else 400)


def test_entity_links_per_profile() -> None:
    app = Entity("apps", "a", "a", node_fqn="/ns/a", namespace="/ns", component="host")
    assert make_wire("spec", "v").entities.is_located_on(app) == "/api/v1/apps/a/is-located-on"
    assert make_wire("medkit", "v").entities.is_located_on(app) == "/api/v1/components/host"
    xv = make_wire("spec", "v").entities.ref_vendor(app, {})
    assert xv["ros2"]["node"] == "/ns/a"
    out: dict[str, Any] = {"capabilities": [{"name": "data", "href": "/api/v1/apps/a/data"}]}
    make_wire("spec", "v").entities.detail_extras(app, out)
    assert out["data"] == "/api/v1/apps/a/data" and out["_links"]["collection"] == "/api/v1/apps"
