"""Trigger conditions and JSON Pointer (pure): validation and firing rules."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_POINTER = 1024
CONDITION_TYPES = ("OnChange", "OnChangeTo", "EnterRange", "LeaveRange")
_MISSING = object()


class ConditionError(ValueError):
    """A trigger condition or JSON Pointer that cannot be used; the message says why."""


def parse_pointer(text: Any) -> tuple[str, ...]:
    """RFC 6901 tokens of a JSON Pointer ('' is the whole document)."""
    if not isinstance(text, str):
        raise ConditionError("'path' must be a string (a JSON Pointer such as '/data')")
    if len(text) > MAX_POINTER:
        raise ConditionError(f"'path' is longer than {MAX_POINTER} characters")
    if text == "":
        return ()
    if not text.startswith("/"):
        raise ConditionError(f"'path' {text!r} is not a JSON Pointer: it must start with '/'")
    tokens = []
    for raw in text[1:].split("/"):
        k = 0
        while True:
            k = raw.find("~", k)
            if k < 0:
                break
            if k + 1 >= len(raw) or raw[k + 1] not in "01":
                raise ConditionError(f"'path' {text!r}: '~' must be followed by 0 or 1")
            k += 2
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


def resolve_pointer(doc: Any, tokens: tuple[str, ...]) -> Any:
    """The value the tokens select, or MISSING when the document has no such member."""
    value = doc
    for token in tokens:
        if isinstance(value, Mapping):
            if token not in value:
                return _MISSING
            value = value[token]
        elif isinstance(value, list):
            if not token.isdigit() or (token != "0" and token.startswith("0")):
                return _MISSING
            index = int(token)
            if index >= len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def missing(value: Any) -> bool:
    """True when resolve_pointer found nothing."""
    return value is _MISSING


def json_equal(a: Any, b: Any) -> bool:
    """JSON deep equality: numbers compare by value (1 == 1.0), bools are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Condition:
    """A validated condition: its type and its parameters (echoed flat in the trigger body)."""

    type: str
    params: dict[str, Any]

    def body(self) -> dict[str, Any]:
        """The `trigger_condition` object."""
        return {"condition_type": self.type, **self.params}

    def fires(self, previous: Any, current: Any, has_previous: bool) -> bool:
        """Whether the change previous -> current fires (has_previous False: first sample)."""
        t = self.type
        if t == "OnChange":
            return not has_previous or not json_equal(previous, current)
        if t == "OnChangeTo":
            target = self.params["target_value"]
            return json_equal(current, target) and (
                not has_previous or not json_equal(previous, current))
        if not has_previous:
            return False
        lo, hi = self.params["lower_bound"], self.params["upper_bound"]
        p, c = _number(previous), _number(current)
        if p is None or c is None:
            return False
        was_in, is_in = lo <= p <= hi, lo <= c <= hi
        if t == "EnterRange":
            return not was_in and is_in
        return was_in and not is_in  # LeaveRange


def parse_condition(raw: Any) -> Condition:
    """A Condition from a `trigger_condition` object; ConditionError names the problem."""
    if not isinstance(raw, Mapping):
        raise ConditionError("'trigger_condition' must be an object with a 'condition_type'")
    ctype = raw.get("condition_type")
    if not isinstance(ctype, str):
        raise ConditionError("'trigger_condition.condition_type' must be a string, one of "
                             + ", ".join(CONDITION_TYPES))
    params = {k: v for k, v in raw.items() if k != "condition_type"}
    if ctype == "OnChange":
        return Condition(ctype, params)
    if ctype == "OnChangeTo":
        if "target_value" not in params:
            raise ConditionError("OnChangeTo needs 'target_value' (any JSON value)")
        return Condition(ctype, params)
    if ctype in ("EnterRange", "LeaveRange"):
        bounds = []
        for name in ("lower_bound", "upper_bound"):
            value = params.get(name)
            number = _number(value)
            if number is None or math.isinf(number):
                raise ConditionError(f"{ctype} needs '{name}' as a finite number; got {value!r}")
            bounds.append(number)
        if bounds[0] > bounds[1]:
            raise ConditionError(f"{ctype}: 'lower_bound' ({bounds[0]:g}) is above "
                                 f"'upper_bound' ({bounds[1]:g})")
        return Condition(ctype, params)
    raise ConditionError(f"Unknown condition_type {ctype!r}; use one of "
                         + ", ".join(CONDITION_TYPES))
