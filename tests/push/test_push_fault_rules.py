"""Fault-trigger rules: checks, value extraction, crossing, stored records."""

from __future__ import annotations

import pytest

from gateway.errors import ApiError
from gateway.push.fault_rules import crossed, extract, from_record, numeric, parse_rule

BODY = {"data_name": "/powertrain/engine/temperature", "operator": ">", "threshold": 92,
        "fault_code": "ENGINE_HOT"}


def test_rule_body_and_defaults() -> None:
    rule = parse_rule(BODY, "ftr_1", "temp_sensor")
    assert rule.body() == {"id": "ftr_1", "data_name": "/powertrain/engine/temperature",
                           "operator": ">", "threshold": 92.0, "fault_code": "ENGINE_HOT",
                           "severity": "ERROR", "active": True}
    assert rule.topic_path == "/powertrain/engine/temperature"
    assert parse_rule({**BODY, "data_name": "temperature"}, "ftr_2", "a").topic_path == \
        "/temperature"
    assert "92.5 > 92" in rule.description(92.5)


@pytest.mark.parametrize("change", [
    {"data_name": ""}, {"operator": "!="}, {"threshold": "hot"}, {"threshold": True},
    {"fault_code": ""}, {"severity": "LOUD"}, {"active": "yes"}, {"path": "temperature"},
    {"severity": {}}, {"severity": ["ERROR"]}, {"operator": {}}])
def test_rule_field_errors(change: dict) -> None:
    with pytest.raises(ApiError) as info:
        parse_rule({**BODY, **change}, "ftr_1", "a")
    assert info.value.status == 400 and info.value.error_code == "invalid-parameter"


def test_numeric_and_extract() -> None:
    assert numeric(True) == 1.0 and numeric(" 2.5 ") == 2.5 and numeric("x") is None
    assert numeric(float("nan")) is None and numeric([1]) is None
    msg = {"header": {"stamp": {"sec": 1}}, "temperature": 93.0, "variance": 0.25}
    assert extract(msg, (), "/powertrain/engine/temperature") == 93.0
    assert extract({"data": 4}, (), "/x") == 4.0
    assert extract({"level": 7, "name": "a", "ok": True}, (), "/x") == 7.0
    assert extract({"a": 1, "b": 2}, (), "/x") is None
    assert extract(msg, ("variance",), "/t") == 0.25
    assert extract(msg, ("missing",), "/t") is None
    assert extract(12, (), "/t") == 12.0


def test_crossing_operators() -> None:
    assert crossed(92.5, ">", 92) and not crossed(92, ">", 92)
    assert crossed(92, ">=", 92) and crossed(1, "<", 2) and crossed(2, "<=", 2)
    assert crossed(1.0 + 1e-12, "==", 1.0) and not crossed(1.1, "==", 1.0)


def test_records_round_trip_and_malformed_dropped() -> None:
    rule = parse_rule(BODY, "ftr_7", "temp_sensor")
    rule.crossed = True
    again = from_record(rule.record())
    assert again is not None and again.crossed and again.app_id == "temp_sensor"
    assert again.body() == rule.body()
    assert from_record({"id": "ftr_8"}) is None
    assert from_record({**BODY, "id": "ftr_9", "app_id": "a", "operator": "?"}) is None
