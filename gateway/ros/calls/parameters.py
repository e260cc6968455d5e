"""Node parameters through the standard parameter services, with defaults and a negative cache.

rclpy offers no "reset to default" service: the value first seen for each parameter of a node
(at the gateway's first contact with that node) is recorded and is what a reset restores.
Nodes whose parameter services do not answer are skipped for `negative_ttl_s` afterwards, so
a listing over many nodes waits for a silent node at most once per period.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import Parameter, ParameterValue

from .services import CallFailed, CallTimeout, NotAvailable, ServiceCaller

# rcl_interfaces/msg/ParameterType values and the ParameterValue field of each.
TYPE_NAMES = {0: "not_set", 1: "bool", 2: "integer", 3: "double", 4: "string",
              5: "byte_array", 6: "bool_array", 7: "integer_array", 8: "double_array",
              9: "string_array"}
_FIELDS = {1: "bool_value", 2: "integer_value", 3: "double_value", 4: "string_value",
           5: "byte_array_value", 6: "bool_array_value", 7: "integer_array_value",
           8: "double_array_value", 9: "string_array_value"}
_ARRAY_OF = {5: 2, 6: 1, 7: 2, 8: 3, 9: 4}
_INT64 = (-(1 << 63), (1 << 63) - 1)

_SRV = "rcl_interfaces/srv/"


# ---------------------------------------------------------------------------------------------
# Pure parts: value conversion and the negative cache


class ValueNotConvertible(ValueError):
    """A JSON value that cannot become a value of the parameter's type."""


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _scalar(type_code: int, value: Any, byte: bool = False) -> Any:
    if type_code == 1:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ValueNotConvertible(f"cannot convert {_describe(value)} to bool")
    if type_code == 2:
        out: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            out = value
        elif isinstance(value, float) and math.isfinite(value) and value == int(value):
            out = int(value)
        elif isinstance(value, str):
            try:
                out = int(value.strip())
            except ValueError:
                out = None
        lo, hi = (0, 255) if byte else _INT64
        if out is None:
            raise ValueNotConvertible(
                f"cannot convert {_describe(value)} to {'byte' if byte else 'integer'}")
        if not lo <= out <= hi:
            raise ValueNotConvertible(f"{out} is outside {lo}..{hi}")
        return out
    if type_code == 3:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise ValueNotConvertible(f"cannot convert {_describe(value)} to double")
    if type_code == 4:
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return repr(value)
        raise ValueNotConvertible(f"cannot convert {_describe(value)} to string")
    raise ValueNotConvertible(f"unsupported parameter type {type_code}")


def coerce(type_code: int, value: Any) -> Any:
    """`value` converted to a parameter type (see TYPE_NAMES); ValueNotConvertible otherwise."""
    if type_code == 0:
        type_code = infer_type(value)
    item = _ARRAY_OF.get(type_code)
    if item is None:
        return _scalar(type_code, value)
    if not isinstance(value, list):
        raise ValueNotConvertible(
            f"expected an array for a {TYPE_NAMES[type_code]} parameter, got {_describe(value)}")
    out = []
    for k, element in enumerate(value):
        try:
            out.append(_scalar(item, element, byte=type_code == 5))
        except ValueNotConvertible as exc:
            raise ValueNotConvertible(f"element [{k}]: {exc}") from None
    return out


def infer_type(value: Any) -> int:
    """The parameter type a JSON value naturally has (for parameters without a type yet)."""
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return 2
    if isinstance(value, float):
        return 3
    if isinstance(value, str):
        return 4
    if isinstance(value, list) and value:
        first = infer_type(value[0])
        return {1: 6, 2: 7, 3: 8, 4: 9}.get(first, 9)
    if isinstance(value, list):
        return 9
    raise ValueNotConvertible(f"cannot use {_describe(value)} as a parameter value")


class NegativeCache:
    """Keys (nodes) that did not answer, each skipped until its entry expires."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._until: dict[str, float] = {}

    def mark(self, key: str, now: float) -> None:
        """Remember that key did not answer at `now`."""
        if self.ttl_s > 0:
            self._until[key] = now + self.ttl_s

    def remaining(self, key: str, now: float) -> float:
        """Seconds key is still skipped (0 when it is not)."""
        until = self._until.get(key)
        if until is None:
            return 0.0
        if now >= until:
            del self._until[key]
            return 0.0
        return until - now

    def clear(self, key: str) -> None:
        """Forget key (it answered)."""
        self._until.pop(key, None)


# ---------------------------------------------------------------------------------------------
# Messages


def value_of(pv: Any) -> tuple[int, Any]:
    """(type code, JSON-ready value) of a rcl_interfaces/msg/ParameterValue."""
    code = int(pv.type)
    field = _FIELDS.get(code)
    if field is None:
        return 0, None
    raw = getattr(pv, field)
    if code == 5:
        return code, [b[0] if isinstance(b, (bytes, bytearray)) else int(b) for b in raw]
    if code in (6, 7, 8, 9):
        return code, list(raw.tolist() if hasattr(raw, "tolist") else raw)
    return code, raw


def to_msg(type_code: int, value: Any) -> Any:
    """A ParameterValue message holding an already coerced value."""
    if type_code == 0:
        type_code = infer_type(value)
    if type_code == 5:
        value = [bytes([v]) for v in value]
    return ParameterValue(type=type_code, **{_FIELDS[type_code]: value})


# ---------------------------------------------------------------------------------------------
# The store


class ParameterError(Exception):
    """A parameter operation that failed; `node` names the node."""

    def __init__(self, node: str, message: str) -> None:
        super().__init__(message)
        self.node = node


class NodeUnavailable(ParameterError):
    """The node's parameter services are absent or did not answer (or are negatively cached)."""


class NodeFailed(ParameterError):
    """Any other failure talking to the node."""


class ParameterNotFound(ParameterError):
    """The node has no parameter of that name."""


class ParameterRejected(ParameterError):
    """The node refused the new value; the message is the node's reason."""


@dataclass(frozen=True)
class Param:
    """One parameter of one node."""

    node: str
    name: str
    type_code: int
    value: Any
    description: str = ""
    read_only: bool = False
    range: dict[str, Any] | None = None

    @property
    def type_name(self) -> str:
        """bool, integer, double, string, ... (see TYPE_NAMES)."""
        return TYPE_NAMES.get(self.type_code, str(self.type_code))


def _range_of(desc: Any) -> dict[str, Any] | None:
    for attr in ("floating_point_range", "integer_range"):
        ranges = getattr(desc, attr, None)
        if ranges:
            r = ranges[0]
            return {"from": r.from_value, "to": r.to_value, "step": r.step}
    return None


class ParameterStore:
    """Lists, reads, sets and resets node parameters; records first-seen values as defaults."""

    def __init__(self, caller: ServiceCaller, timeout_s: float, negative_ttl_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.caller = caller
        self.timeout_s = timeout_s
        self.negative = NegativeCache(negative_ttl_s)
        self.clock = clock
        self.defaults: dict[str, dict[str, tuple[int, Any]]] = {}
        # values this gateway set (a PUT or a reset), per node: (value, clock time)
        self.written: dict[str, dict[str, tuple[Any, float]]] = {}

    def default_of(self, node: str, name: str) -> tuple[int, Any] | None:
        """The recorded default (type code, value) of a parameter, or None."""
        return self.defaults.get(node, {}).get(name)

    async def _call(self, node: str, service: str, request: Any) -> Any:
        left = self.negative.remaining(node, self.clock())
        if left > 0:
            raise NodeUnavailable(node, f"node {node} did not answer parameter requests "
                                        f"recently; retried in {left:.0f} s")
        type_name = _SRV + "".join(p.capitalize() for p in service.split("_"))
        try:
            response = await self.caller.call(f"{node}/{service}", type_name, request,
                                              self.timeout_s)
        except (CallTimeout, NotAvailable) as exc:
            self.negative.mark(node, self.clock())
            raise NodeUnavailable(node, f"node {node} is unavailable: {exc}") from None
        except CallFailed as exc:
            raise NodeFailed(node, f"parameter request to {node} failed: {exc}") from None
        self.negative.clear(node)
        return response

    async def _values(self, node: str, names: list[str]) -> list[Param]:
        from rcl_interfaces.srv import (  # noqa: PLC0415 - ROS types load on first use
            DescribeParameters,
            GetParameters,
        )

        got: Any
        described: Any
        got, described = await asyncio.gather(
            self._call(node, "get_parameters", GetParameters.Request(names=names)),
            self._call(node, "describe_parameters", DescribeParameters.Request(names=names)),
            return_exceptions=True)
        for outcome in (got, described):
            if isinstance(outcome, BaseException):
                raise outcome
        values = list(got.values)
        if len(values) != len(names):
            # GetParameters answers an empty list when any name is unknown.
            if len(names) == 1:
                raise ParameterNotFound(node, f"node {node} has no parameter '{names[0]}'")
            raise NodeFailed(node, f"the parameters of {node} changed while being read")
        descs = list(described.descriptors)
        if len(descs) != len(names):
            descs = [None] * len(names)
        out = []
        recorded = self.defaults.setdefault(node, {})
        for name, pv, desc in zip(names, values, descs, strict=True):
            code, value = value_of(pv)
            recorded.setdefault(name, (code, value))
            out.append(Param(node, name, code, value,
                             description=getattr(desc, "description", "") or "",
                             read_only=bool(getattr(desc, "read_only", False)),
                             range=_range_of(desc) if desc is not None else None))
        return out

    async def params(self, node: str) -> list[Param]:
        """Every parameter of the node, sorted by name."""
        from rcl_interfaces.srv import ListParameters  # noqa: PLC0415 - ROS types load on first use

        listed = await self._call(node, "list_parameters", ListParameters.Request(depth=0))
        names = sorted(listed.result.names)
        if not names:
            self.defaults.setdefault(node, {})
            return []
        return await self._values(node, names)

    async def get(self, node: str, name: str) -> Param:
        """One parameter; the first contact with a node records all its defaults."""
        if node not in self.defaults:
            for p in await self.params(node):
                if p.name == name:
                    return p
            raise ParameterNotFound(node, f"node {node} has no parameter '{name}'")
        return (await self._values(node, [name]))[0]

    async def _set(self, node: str, items: list[tuple[str, int, Any]]) -> list[str | None]:
        from rcl_interfaces.srv import SetParameters  # noqa: PLC0415 - ROS types load on first use

        request = SetParameters.Request(parameters=[
            Parameter(name=name, value=to_msg(code, value)) for name, code, value in items])
        response = await self._call(node, "set_parameters", request)
        results = list(response.results)
        if len(results) != len(items):
            raise NodeFailed(node, f"node {node} answered {len(results)} results for "
                                   f"{len(items)} parameters")
        now = self.clock()
        for (name, _, value), r in zip(items, results, strict=True):
            if r.successful:
                self.written.setdefault(node, {})[name] = (value, now)
        return [None if r.successful else (r.reason or "rejected by the node")
                for r in results]

    async def set(self, node: str, name: str, value: Any) -> Param:
        """Set a parameter from a JSON value converted to its type (ValueNotConvertible)."""
        current = await self.get(node, name)
        code = current.type_code or infer_type(value)
        coerced = coerce(code, value)
        (reason,) = await self._set(node, [(name, code, coerced)])
        if reason is not None:
            raise ParameterRejected(node, reason)
        return Param(node, name, code, coerced, current.description, current.read_only,
                     current.range)

    async def reset(self, node: str, name: str) -> Param:
        """Restore the recorded default of one parameter."""
        current = await self.get(node, name)
        default = self.default_of(node, name)
        if default is None or (current.type_code, current.value) == default:
            return current
        (reason,) = await self._set(node, [(name, *default)])
        if reason is not None:
            raise ParameterRejected(node, reason)
        return Param(node, name, default[0], default[1], current.description,
                     current.read_only, current.range)

    async def reset_all(self, node: str) -> dict[str, str]:
        """Restore every changed parameter; returns the node's reason per refused parameter."""
        params = await self.params(node)
        changed = []
        for p in params:
            default = self.default_of(node, p.name)
            if default is not None and (p.type_code, p.value) != default:
                changed.append((p.name, *default))
        if not changed:
            return {}
        reasons = await self._set(node, changed)
        return {name: reason for (name, _, _), reason in zip(changed, reasons, strict=True)
                if reason is not None}
