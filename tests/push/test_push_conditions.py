"""Trigger conditions and JSON Pointer: the firing rules on their edges."""

from __future__ import annotations

import math

import pytest

from gateway.push.conditions import (
    ConditionError,
    json_equal,
    missing,
    parse_condition,
    parse_pointer,
    resolve_pointer,
)


def run(cond: dict, values: list) -> list[bool]:
    c = parse_condition(cond)
    out, prev, has = [], None, False
    for v in values:
        out.append(c.fires(prev, v, has))
        prev, has = v, True
    return out


def test_on_change_fires_first_then_on_difference_only() -> None:
    assert run({"condition_type": "OnChange"}, [1, 1.0, 2, 2, {"a": [1]}, {"a": [1.0]}]) == [
        True, False, True, False, True, False]


def test_bool_is_not_a_number_for_equality() -> None:
    assert not json_equal(True, 1) and json_equal(1, 1.0) and not json_equal("1", 1)


def test_on_change_to_rearms_after_leaving_target() -> None:
    cond = {"condition_type": "OnChangeTo", "target_value": "open"}
    assert run(cond, ["open", "open", "closed", "open"]) == [True, False, False, True]
    with pytest.raises(ConditionError, match="target_value"):
        parse_condition({"condition_type": "OnChangeTo"})


def test_enter_range_inclusive_bounds_never_first_sample() -> None:
    cond = {"condition_type": "EnterRange", "lower_bound": 10, "upper_bound": 20}
    assert run(cond, [15, 9, 10, 20, 21, 20.0]) == [False, False, True, False, False, True]


def test_leave_range_and_non_numbers_never_fire() -> None:
    cond = {"condition_type": "LeaveRange", "lower_bound": 10, "upper_bound": 20}
    assert run(cond, [25, 20, 20.5, 15, "x", 30, 15, math.nan, 30]) == [
        False, False, True, False, False, False, False, False, False]


@pytest.mark.parametrize("cond", [
    {"condition_type": "EnterRange", "lower_bound": 5},
    {"condition_type": "EnterRange", "lower_bound": 5, "upper_bound": 1},
    {"condition_type": "LeaveRange", "lower_bound": "a", "upper_bound": 1},
    {"condition_type": "LeaveRange", "lower_bound": True, "upper_bound": 1},
    {"condition_type": "LeaveRange", "lower_bound": float("inf"), "upper_bound": 1},
    {"condition_type": "Sometimes"},
    {"condition_type": 3},
    "OnChange",
])
def test_bad_conditions_are_refused(cond: object) -> None:
    with pytest.raises(ConditionError):
        parse_condition(cond)


def test_parameters_are_echoed_flat() -> None:
    c = parse_condition({"condition_type": "LeaveRange", "lower_bound": 1, "upper_bound": 2})
    assert c.body() == {"condition_type": "LeaveRange", "lower_bound": 1, "upper_bound": 2}


def test_json_pointer() -> None:
    doc = {"data": 1, "a/b": {"~x": [10, 20]}, "list": [{"v": 3}]}
    assert resolve_pointer(doc, parse_pointer("/data")) == 1
    assert resolve_pointer(doc, parse_pointer("/a~1b/~0x/1")) == 20
    assert resolve_pointer(doc, parse_pointer("/list/0/v")) == 3
    assert resolve_pointer(doc, parse_pointer("")) is doc
    for bad in ("/nope", "/list/1", "/list/01", "/data/x"):
        assert missing(resolve_pointer(doc, parse_pointer(bad)))
    for text in ("data", "/a~2", "/" * 1100, 5):
        with pytest.raises(ConditionError):
            parse_pointer(text)
