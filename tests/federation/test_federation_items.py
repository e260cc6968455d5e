"""Item ids across gateways (rules 2, 4, 5 and 6 in gateway/model/items.py) and peer items
re-serialized with the local schema (gateway/federation/items.py)."""

from __future__ import annotations

import pytest

from gateway.federation.items import reserialize, source_id
from gateway.model.items import (
    FleetItem,
    ItemLookupError,
    MemberItem,
    assign_ids,
    fleet_ids,
    operation_fleet_ids,
    reattribute,
    resolve_topic,
)

XV = "x-vendor"
TEMP = "/powertrain/engine/temperature"


def test_rule4_one_topic_is_one_item_per_gateway_qualified_across_gateways() -> None:
    # local: two apps publish one topic -> one item with both members (not qualified)
    items = [FleetItem("local", ("temp_sensor", "temp_monitor"), TEMP),
             FleetItem("local", ("lidar_sensor",), "/perception/lidar/scan")]
    assert fleet_ids(items) == [TEMP, "/perception/lidar/scan"]
    # a second gateway contributes the same topic: every copy is qualified by its member
    items.append(FleetItem("robot2", ("robot2__temp_sensor",), TEMP))
    assert fleet_ids(items) == [f"temp_sensor:{TEMP}", "/perception/lidar/scan",
                                f"robot2__temp_sensor:{TEMP}"]


def test_rule5_member_half_is_reattributed() -> None:
    assert reattribute("calibration:calibrate", {"calibration": "r2__calibration"}) == \
        "r2__calibration:calibrate"
    assert reattribute("calibrate", {"calibrate": "x"}) == "calibrate"
    assert reattribute("other:p", {"calibration": "x"}) == "other:p"


def test_rules_1_to_3_across_gateways_for_operations() -> None:
    rows = [("local", ("calibration",), "/powertrain/engine/calibrate"),
            ("local", ("long_calibration",), "/powertrain/engine/long_calibration"),
            ("robot2", ("lidar_sensor",), "/perception/lidar/calibrate"),
            ("robot2", ("robot2__calibration",), "/powertrain/engine/calibrate")]
    assert operation_fleet_ids(rows) == [
        "calibration:calibrate", "long_calibration", "lidar_sensor:calibrate",
        "robot2__calibration:calibrate"]
    # the fleet of one gives exactly the local assignment
    local = rows[:2]
    assert operation_fleet_ids(local) == assign_ids(
        [MemberItem(m[0], p) for _, m, p in local]) == ["calibrate", "long_calibration"]
    # rule 3 per member survives the merge
    multi = [("r", ("m",), "/a/reset"), ("r", ("m",), "/b/reset"), ("l", ("n",), "/c/start")]
    assert operation_fleet_ids(multi) == ["a/reset", "b/reset", "start"]


def test_rule6_bare_and_qualified_topics() -> None:
    topics = [TEMP, "/scan", TEMP]
    members = [("temp_sensor",), ("lidar",), ("r2__temp_sensor",)]
    ids = [f"temp_sensor:{TEMP}", "/scan", f"r2__temp_sensor:{TEMP}"]
    assert resolve_topic("/scan", topics, members, ids) == 1
    assert resolve_topic("scan", topics, members, ids) == 1
    assert resolve_topic(f"r2__temp_sensor:{TEMP}", topics, members, ids) == 2
    assert resolve_topic(f"r2__temp_sensor:{TEMP[1:]}", topics, members, ids) == 2
    with pytest.raises(ItemLookupError) as err:
        resolve_topic(TEMP, topics, members, ids)
    assert err.value.candidates == [ids[0], ids[2]]
    with pytest.raises(ItemLookupError) as err:
        resolve_topic("/nope", topics, members, ids)
    assert err.value.candidates == []


DATA = {"id": TEMP, "name": "temperature", "category": "currentData", "extra": 1,
        XV: {"ros2": {"direction": "publish", "topic": TEMP, "type": "t/msg/T", "qos": "x"},
             "member_ids": ["temp_sensor"], "secret": "dropped",
             "type_info": {"schema": {}, "default_value": {}}}}


def test_peer_items_are_rebuilt_field_by_field() -> None:
    kept, dropped = reserialize("data", [DATA], XV, "robot2")
    assert dropped == []
    assert kept == [{"id": TEMP, "name": "temperature", "category": "currentData",
                     XV: {"ros2": {"direction": "publish", "topic": TEMP, "type": "t/msg/T"},
                          "member_ids": ["temp_sensor"],
                          "type_info": {"schema": {}, "default_value": {}}}}]


@pytest.mark.parametrize(("collection", "raw", "error"), [
    ("data", {"id": 5, "name": "x"}, "'id'"),
    ("data", {"id": "no-slash", "name": "x"}, "topic path"),
    ("data", {"id": "/t", "name": "t", XV: {"member_ids": "a"}}, "member_ids"),
    ("operations", {"id": "c", "name": "c", XV: {"ros2_kind": "topic"}}, "ros2_kind"),
    ("operations", {"id": "c", "name": "c"}, "missing"),
    ("configurations", {"id": "a:p", "name": "p"}, "'value'"),
    ("logs", {"id": "1", "timestamp": "t", "severity": "loud", "message": "m",
              "context": {"node": "/n"}}, "severity"),
    ("logs", {"id": "1", "timestamp": "t", "severity": "info", "message": "m",
              "context": {"node": "/n", "line": "7"}}, "line"),
    ("faults", {"fault_code": "F", "severity": 7}, "'severity'"),
    ("version-info", {"version": "1"}, "vendor_info"),
    ("data", "not an object", "not an object"),
])
def test_invalid_peer_items_are_dropped_with_the_reason(collection: str, raw: object,
                                                       error: str) -> None:
    kept, dropped = reserialize(collection, [raw, DATA] if collection == "data" else [raw],
                                XV, "robot2")
    assert len(dropped) == 1 and dropped[0]["peer"] == "robot2"
    assert error in dropped[0]["error"]
    if collection == "data":
        assert [k["id"] for k in kept] == [TEMP]


def test_valid_items_of_each_collection() -> None:
    op = {"id": "calibrate", "name": "calibrate", "proximity_proof_required": False,
          "asynchronous_execution": False, "type": "service", "service_type": "std_srvs/srv/T",
          "schema": {"request": {}}, "bogus": 1,
          XV: {"ros2_kind": "service", "ros2_service": "/e/calibrate", "ros2_type": "T",
               "member_ids": ["calibration"]}}
    conf = {"id": "a:p", "name": "p", "type": "parameter", "value": [1, 2],
            XV: {"ros2": {"node": "/a", "parameter": "p", "type": "integer_array"},
                 "read_only": False, "default_value": [1], "member_ids": ["a"]}}
    log = {"id": "9", "timestamp": "2024-01-01T00:00:00.000000001Z", "severity": "warning",
           "message": "m", "context": {"node": "/n", "line": 3}}
    fault = {"fault_code": "F", "severity": "ERROR", "message": "m", "timestamp": "t",
             "source": "/n", XV: {"status": "CONFIRMED", "occurrence_count": 2,
                                  "reporting_sources": ["/n"], "unknown": True}}
    for collection, raw in (("operations", op), ("configurations", conf), ("logs", log),
                            ("faults", fault)):
        kept, dropped = reserialize(collection, [raw], XV, "p")
        assert dropped == [] and len(kept) == 1, collection
    assert "bogus" not in reserialize("operations", [op], XV, "p")[0][0]
    assert "unknown" not in reserialize("faults", [fault], XV, "p")[0][0][XV]


def test_source_id_is_best_effort() -> None:
    assert source_id({"id": "x"}) == "x" and source_id({"fault_code": "F"}) == "F"
    assert source_id([1]) is None and source_id({"id": True}) is None
