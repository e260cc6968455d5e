"""JSON object -> ROS 2 message, validating every field strictly (message.py: JSON policy)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractType,
    Array,
    BoundedSequence,
    BoundedString,
    BoundedWString,
    NamespacedType,
    UnboundedString,
    UnboundedWString,
)

from .msgtypes import (
    _FLOAT32_MAX,
    MessageFieldError,
    _basic_name,
    _fields,
    _int_range,
    _kind,
    _nested_class,
    _ros_type_str,
    type_name_of,
)

# ---------------------------------------------------------------------------------------------
# dict -> message

_FromJson = Callable[[Any], Any]
_from_dict_plans: dict[type, _FromJson] = {}


def dict_to_message(cls: type, data: Mapping[str, Any], *, path: str = "") -> Any:
    """Build a ``cls`` message from a JSON object, validating every given field strictly."""
    try:
        return _from_dict_plan(cls)(data)
    except MessageFieldError as exc:
        if not path:
            raise
        raise exc.within(path) from None


def _from_dict_plan(cls: type) -> _FromJson:
    plan = _from_dict_plans.get(cls)
    if plan is None:
        plan = _from_dict_plans[cls] = _build_from_dict(cls)
    return plan


def _build_from_dict(cls: type) -> _FromJson:
    convs = {name: _value_from_json(t) for name, t in _fields(cls)}
    ros = type_name_of(cls)
    # Our checks replace rclpy's (which lack field paths and take True for an int).
    extra = {"check_fields": False} if "_check_fields" in getattr(cls, "__slots__", ()) else {}

    def from_dict(data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise MessageFieldError("", f"expected object ({ros}), got {_kind(data)}")
        kwargs = dict(extra)
        for key, value in data.items():
            conv = convs.get(key)
            if conv is None:
                known = ", ".join(convs) or "no fields"
                raise MessageFieldError(str(key), f"unknown field ({ros} has: {known})")
            try:
                kwargs[key] = conv(value)
            except MessageFieldError as exc:
                raise exc.within(key) from None
        return cls(**kwargs)

    return from_dict


def _value_from_json(t: AbstractType) -> _FromJson:
    if isinstance(t, NamespacedType):
        return _from_dict_plan(_nested_class(t))
    if isinstance(t, AbstractNestedType):
        return _sequence_from_json(t)
    return _scalar_from_json(t)


def _scalar_from_json(t: AbstractType) -> _FromJson:
    ros = _ros_type_str(t)
    if isinstance(t, (BoundedString, BoundedWString)):
        return _string_conv(ros, int(t.maximum_size))
    if isinstance(t, (UnboundedString, UnboundedWString)):
        return _string_conv(ros, None)
    name = _basic_name(t)
    if name == "bool":
        return _bool_conv
    if name in ("float32", "float64"):
        return _float_conv(ros, _FLOAT32_MAX if name == "float32" else None)
    if name in ("char", "wchar"):
        return _char_conv(ros, 0x100 if name == "char" else 0x110000)
    int_range = _int_range(name or "")
    if int_range is None:
        raise TypeError(f"unsupported ROS field type {t!r}")
    conv = _int_conv(ros, *int_range)
    if name == "byte":
        return lambda value: _int_to_byte(value, conv)
    return conv


def _bool_conv(value: Any) -> bool:
    if type(value) is bool:
        return value
    raise MessageFieldError("", f"expected bool, got {_kind(value)}")


def _int_conv(ros: str, lo: int, hi: int) -> _FromJson:
    def conv(value: Any) -> int:
        if type(value) is not int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise MessageFieldError("", f"expected {ros}, got {_kind(value)}")
            value = int(value)
        if lo <= value <= hi:
            return value
        raise MessageFieldError("", f"expected {ros}, got {value} (out of range [{lo}, {hi}])")

    return conv


def _int_to_byte(value: Any, conv: _FromJson) -> bytes:
    if isinstance(value, (bytes, bytearray)) and len(value) == 1:
        return bytes(value)
    return bytes((conv(value),))


def _float_conv(ros: str, limit: float | None) -> _FromJson:
    def conv(value: Any) -> float:
        kind = type(value)
        if kind is float:
            number = value
        elif value is None:
            return math.nan
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                raise MessageFieldError("", f"expected {ros}, got {value} (out of range)") from None
        else:
            raise MessageFieldError("", f"expected {ros}, got {_kind(value)}")
        if limit is not None and not -limit <= number <= limit and math.isfinite(number):
            raise MessageFieldError("", f"expected {ros}, got {value} (out of range)")
        return number

    return conv


def _string_conv(ros: str, bound: int | None) -> _FromJson:
    def conv(value: Any) -> str:
        if type(value) is not str:
            if not isinstance(value, str):
                raise MessageFieldError("", f"expected {ros}, got {_kind(value)}")
            value = str(value)
        if bound is not None and len(value) > bound:
            raise MessageFieldError("", f"expected {ros}, got string of length {len(value)}")
        if not value.isascii():
            _check_unicode(value, ros)
        return value

    return conv


def _check_unicode(value: str, ros: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MessageFieldError(
            "", f"expected {ros}, got string with a lone surrogate (not valid Unicode)"
        ) from None


def _char_conv(ros: str, limit: int) -> _FromJson:
    def conv(value: Any) -> str:
        if not isinstance(value, str):
            raise MessageFieldError("", f"expected {ros}, got {_kind(value)}")
        if len(value) != 1 or ord(value) >= limit:
            raise MessageFieldError("", f"expected {ros}, got string {value!r}")
        _check_unicode(value, ros)
        return value

    return conv


def _sequence_from_json(t: AbstractNestedType) -> _FromJson:
    ros = _ros_type_str(t)
    name = _basic_name(t.value_type)
    accepts_bytes = name in ("byte", "uint8")
    size = t.size if isinstance(t, Array) else None
    bound = t.maximum_size if isinstance(t, BoundedSequence) else size
    convert_items = _items_from_json(t.value_type, name)

    def conv(value: Any) -> list[Any]:
        if not isinstance(value, (list, tuple)):
            value = _as_list(value, ros, accepts_bytes)
        n = len(value)
        if (bound is not None and n > bound) or (size is not None and n != size):
            raise MessageFieldError("", f"expected {ros}, got array of length {n}")
        return convert_items(value)

    return conv


def _as_list(value: Any, ros: str, accepts_bytes: bool) -> list[Any]:
    if accepts_bytes and isinstance(value, (bytes, bytearray, memoryview)):
        return list(bytes(value))
    tolist = getattr(value, "tolist", None)  # numpy arrays and array.array from Python callers
    if tolist is None or isinstance(value, (str, Mapping)):
        raise MessageFieldError("", f"expected {ros}, got {_kind(value)}")
    result = tolist()
    if not isinstance(result, list):
        raise MessageFieldError("", f"expected {ros}, got {_kind(value)}")
    return result


def _items_from_json(item: AbstractType, name: str | None) -> Callable[[list[Any]], list[Any]]:
    conv = _value_from_json(item)
    int_range = _int_range(name or "")
    if int_range is not None:
        lo, hi = int_range
        as_bytes = name == "byte"

        def ints(values: list[Any]) -> list[Any]:
            fast = all(type(v) is int for v in values) and (
                not values or (lo <= min(values) and max(values) <= hi)
            )
            if as_bytes:
                return [bytes((v,)) for v in values] if fast else _each(values, conv)
            return values if fast else _each(values, conv)

        return ints
    if name in ("float32", "float64"):
        limit = _FLOAT32_MAX if name == "float32" else math.inf

        def floats(values: list[Any]) -> list[Any]:
            if all(type(v) is float and -limit <= v <= limit for v in values):
                return values
            return _each(values, conv)

        return floats
    return lambda values: _each(values, conv)


def _each(values: list[Any], conv: _FromJson) -> list[Any]:
    out = []
    for index, item in enumerate(values):
        try:
            out.append(conv(item))
        except MessageFieldError as exc:
            raise exc.within(f"[{index}]") from None
    return out


