"""Fault-trigger rules (pure): body checks, value extraction and threshold crossing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import SERVICE_UNAVAILABLE, ApiError, invalid_parameter
from .conditions import ConditionError, missing, parse_pointer, resolve_pointer

OPERATORS = (">", "<", ">=", "<=", "==")
SEVERITIES = {"INFO": 0, "WARNING": 1, "ERROR": 2, "CRITICAL": 3}
EPSILON = 1e-9


@dataclass(eq=False)
class Rule:
    """One threshold rule on a data topic of an app, and its latch."""

    id: str
    app_id: str
    data_name: str
    operator: str
    threshold: float
    fault_code: str
    severity: str = "ERROR"
    active: bool = True
    path: str | None = None
    crossed: bool = False
    value: float | None = None

    @property
    def pointer(self) -> tuple[str, ...]:
        """Tokens of `path`."""
        return parse_pointer(self.path) if self.path else ()

    @property
    def topic_path(self) -> str:
        """The resource path naming the topic ('/' + data_name without a leading slash)."""
        return self.data_name if self.data_name.startswith("/") else "/" + self.data_name

    def body(self) -> dict[str, Any]:
        """The rule as created and listed."""
        out: dict[str, Any] = {"id": self.id, "data_name": self.data_name,
                               "operator": self.operator, "threshold": self.threshold,
                               "fault_code": self.fault_code, "severity": self.severity,
                               "active": self.active}
        if self.path is not None:
            out["path"] = self.path
        return out

    def record(self) -> dict[str, Any]:
        """The stored form (body plus app id and latch)."""
        return {**self.body(), "app_id": self.app_id, "crossed": self.crossed}

    def description(self, value: float) -> str:
        """The fault's description while crossed."""
        return (f"{self.data_name} = {value:g} {self.operator} {self.threshold:g} "
                f"(fault-trigger {self.id})")


def parse_rule(body: Any, rule_id: str, app_id: str) -> Rule:
    """A Rule from a POST body; ApiError 400 naming the first bad field."""
    if not isinstance(body, Mapping):
        raise ApiError(400, "invalid-request", "Request body must be a JSON object with "
                       "data_name, operator, threshold and fault_code")
    data_name = body.get("data_name")
    if not isinstance(data_name, str) or not data_name.strip("/"):
        raise invalid_parameter("'data_name' is required: the topic to watch, e.g. "
                                "/powertrain/engine/temperature")
    operator = body.get("operator")
    if not isinstance(operator, str) or operator not in OPERATORS:
        raise invalid_parameter(f"'operator' must be one of {' '.join(OPERATORS)}; got "
                                f"{operator!r}")
    threshold = body.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
            or not math.isfinite(threshold):
        raise invalid_parameter(f"'threshold' must be a finite number; got {threshold!r}")
    code = body.get("fault_code")
    if not isinstance(code, str) or not code.strip():
        raise invalid_parameter("'fault_code' is required (a non-empty string)")
    severity = body.get("severity", "ERROR")
    if not isinstance(severity, str) or severity not in SEVERITIES:
        raise invalid_parameter(f"'severity' must be one of {', '.join(SEVERITIES)}; got "
                                f"{severity!r}")
    active = body.get("active", True)
    if not isinstance(active, bool):
        raise invalid_parameter(f"'active' must be true or false; got {active!r}")
    path = body.get("path")
    if path is not None:
        try:
            parse_pointer(path)
        except ConditionError as exc:
            raise invalid_parameter(str(exc)) from None
    return Rule(rule_id, app_id, data_name, operator, float(threshold), code, severity,
                active, path)


def check_capacity(count: int, max_rules: int) -> None:
    """ApiError 503 (the spec's capacity answer) when count rules already fill the cap."""
    if count >= max_rules:
        raise ApiError(503, SERVICE_UNAVAILABLE,
                       f"At most {max_rules} fault-trigger rules may exist (setting "
                       f"fault_triggers.max_rules); delete a rule first",
                       parameters={"max_rules": max_rules})


def numeric(value: Any) -> float | None:
    """A number from a JSON value: numbers, bools (1/0) and numeric strings; else None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def extract(payload: Any, pointer: tuple[str, ...], topic: str) -> float | None:
    """The rule's value in a sample: at `path`, else the message's one obvious number.

    Without a path: the payload itself, its `data` field, the field named like the topic's
    last segment (`temperature` of .../temperature), or its only numeric field.
    """
    if pointer:
        value = resolve_pointer(payload, pointer)
        return None if missing(value) else numeric(value)
    direct = numeric(payload)
    if direct is not None or not isinstance(payload, Mapping):
        return direct
    for key in ("data", topic.rstrip("/").rsplit("/", 1)[-1]):
        if key in payload:
            found = numeric(payload[key])
            if found is not None:
                return found
    numbers = [v for v in payload.values()
               if not isinstance(v, (bool, str)) and numeric(v) is not None]
    return numeric(numbers[0]) if len(numbers) == 1 else None


def crossed(value: float, operator: str, threshold: float) -> bool:
    """Whether value is past the threshold (== within 1e-9)."""
    if operator == ">":
        return value > threshold
    if operator == "<":
        return value < threshold
    if operator == ">=":
        return value >= threshold
    if operator == "<=":
        return value <= threshold
    return abs(value - threshold) <= EPSILON


def from_record(record: Mapping[str, Any]) -> Rule | None:
    """A stored rule, or None when the record is malformed."""
    try:
        rule = parse_rule(dict(record), str(record["id"]), str(record["app_id"]))
    except (ApiError, KeyError, TypeError):
        return None
    rule.crossed = bool(record.get("crossed", False))
    return rule
