"""ROS 2 message -> JSON-ready dict, and any value -> JSON-ready value (message.py: JSON policy)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractType,
    NamespacedType,
)

from .msgtypes import (
    _SURROGATE_RE,
    _basic_name,
    _fields,
    _nested_class,
)

# ---------------------------------------------------------------------------------------------
# Message -> dict

_ToJson = Callable[[Any], Any]
_to_dict_plans: dict[type, Callable[[Any], dict[str, Any]]] = {}


def message_to_dict(msg: Any) -> dict[str, Any]:
    """Convert a message instance into a dict of JSON-ready values (see the JSON policy)."""
    return _to_dict_plan(type(msg))(msg)


def default_value(cls: type) -> dict[str, Any]:
    """Return the default instance of a message class as a dict."""
    return message_to_dict(cls())


def _to_dict_plan(cls: type) -> Callable[[Any], dict[str, Any]]:
    plan = _to_dict_plans.get(cls)
    if plan is None:
        plan = _to_dict_plans[cls] = _build_to_dict(cls)
    return plan


def _build_to_dict(cls: type) -> Callable[[Any], dict[str, Any]]:
    steps = tuple((name, _value_to_json(t)) for name, t in _fields(cls))

    def to_dict(msg: Any) -> dict[str, Any]:
        out = {}
        for name, conv in steps:
            value = getattr(msg, name)
            out[name] = value if conv is None else conv(value)
        return out

    return to_dict


def _value_to_json(t: AbstractType) -> _ToJson | None:
    """Return a converter for one field value, or None when the value is JSON-ready."""
    if isinstance(t, NamespacedType):
        return _to_dict_plan(_nested_class(t))
    if isinstance(t, AbstractNestedType):
        return _sequence_to_json(t.value_type)
    if _basic_name(t) == "byte":
        return _byte_to_int
    return None


def _sequence_to_json(item: AbstractType) -> _ToJson:
    if isinstance(item, NamespacedType):
        sub = _to_dict_plan(_nested_class(item))
        return lambda values: [sub(m) for m in values]
    name = _basic_name(item)
    if name == "byte":
        return _bytes_to_ints
    if name is None or name in ("bool", "char", "wchar"):
        return list
    return _numbers_to_list


def _byte_to_int(value: Any) -> int:
    return value[0] if isinstance(value, (bytes, bytearray)) else int(value)


def _bytes_to_ints(values: Any) -> list[int]:
    if isinstance(values, (bytes, bytearray)):
        return list(values)
    try:
        return list(b"".join(values))
    except TypeError:  # a user put ints into a byte[] field
        return [_byte_to_int(v) for v in values]


def _numbers_to_list(values: Any) -> list[Any]:
    # numpy arrays (fixed arrays) and array.array (sequences) both give Python scalars.
    tolist = getattr(values, "tolist", None)
    return tolist() if tolist is not None else list(values)


# ---------------------------------------------------------------------------------------------
# Any value -> JSON-ready value


def to_jsonable(value: Any) -> Any:
    """Convert a value (message, dict, array, scalar) to plain JSON types per the JSON policy."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value if value.isascii() else _clean_str(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return list(bytes(value))
    if hasattr(type(value), "get_fields_and_field_types"):
        return to_jsonable(message_to_dict(value))
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, array.array
    if tolist is not None:
        return to_jsonable(tolist())
    return value


def _clean_str(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE_RE.sub("\ufffd", value)
    return value
