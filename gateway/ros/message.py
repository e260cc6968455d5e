"""ROS 2 messages <-> JSON-ready dicts, JSON Schemas and default values per type.

Works on any generated rclpy class (messages and the request/response/goal/result/feedback
parts of services and actions) by walking ``get_fields_and_field_types()`` and ``SLOT_TYPES``.
Conversion plans are built once per class and cached, so a conversion is one closure call per
field.

JSON policy (project-wide):

- Floats: non-finite values (NaN, +inf, -inf) are JSON ``null``. ``message_to_dict`` keeps
  them as Python floats and orjson writes them as ``null``; ``to_jsonable`` replaces them with
  ``None`` for other encoders. On input, ``null`` in a float field means NaN (so a value read
  from the gateway can be written back); JSON integers are accepted for float fields.
- Integers: only JSON integers, range-checked by bit width (``3.0`` is not an integer).
- Booleans are strict both ways: ``true``/``false`` only for ``bool`` fields, never for
  integer or float fields, and ``0``/``1`` are not accepted for ``bool`` fields.
- ``byte`` (IDL ``octet``, rclpy ``bytes`` of length 1) is an integer 0..255; ``byte[]`` and
  ``uint8[]`` (fixed, bounded or unbounded) are arrays of integers 0..255.
- ``char`` in a ``.msg`` file is ``uint8`` in the generated IDL and an ``int`` in rclpy, so it
  is an integer 0..255 too. Only types written directly in ``.idl`` can hold IDL ``char`` /
  ``wchar``, which rclpy stores as one-character ``str``: those are one-character strings.
- Strings (``string`` and ``wstring``) are JSON strings. rclpy already replaces invalid UTF-8
  in received messages with U+FFFD; ``to_jsonable`` replaces lone surrogates with U+FFFD, and
  input strings holding lone surrogates are rejected. Bounds (``string<=N``) count code points,
  as rclpy does and as JSON Schema ``maxLength`` does.
- Fields absent from an input object keep their defaults; unknown fields are errors.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractType,
    Array,
    BasicType,
    BoundedSequence,
    BoundedString,
    BoundedWString,
    NamespacedType,
    UnboundedSequence,
    UnboundedString,
    UnboundedWString,
)

__all__ = [
    "MessageFieldError",
    "UnknownTypeError",
    "action_schemas",
    "default_value",
    "dict_to_message",
    "field_type_map",
    "import_type",
    "message_to_dict",
    "service_schemas",
    "to_jsonable",
    "type_name_of",
    "type_schema",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# IDL basic type name -> .msg type name (what users of ROS 2 write and read).
_MSG_NAMES = {
    "boolean": "bool",
    "octet": "byte",
    "float": "float32",
    "double": "float64",
    "long double": "float64",
    "short": "int16",
    "long": "int32",
    "long long": "int64",
    "unsigned short": "uint16",
    "unsigned long": "uint32",
    "unsigned long long": "uint64",
}
_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_FLOAT32_MAX = 3.4028234663852886e38
_INTERFACE_KINDS = ("msg", "srv", "action")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_TYPE_NAME_RE = re.compile(
    r"^(?P<pkg>[a-z][a-z0-9_]*)/(?:(?P<kind>msg|srv|action)/)?(?P<name>[A-Z][A-Za-z0-9_]*)$"
)


class MessageFieldError(ValueError):
    """A JSON value does not fit a message field; ``field`` is a dotted path."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"field '{field}': {reason}" if field else reason)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.field, self.reason))

    def within(self, prefix: str) -> MessageFieldError:
        """Return the same error with ``prefix`` (a field name or ``[i]``) put before its path."""
        return MessageFieldError(_join_path(prefix, self.field), self.reason)


class UnknownTypeError(ValueError):
    """A ROS interface type name is malformed or its package or type is not installed."""

    def __init__(self, type_name: str, reason: str) -> None:
        self.type_name = type_name
        self.reason = reason
        super().__init__(f"unknown ROS type '{type_name}': {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.type_name, self.reason))


def _join_path(prefix: str, sub: str) -> str:
    if not sub:
        return prefix
    if not prefix:
        return sub
    return prefix + sub if sub.startswith("[") else f"{prefix}.{sub}"


def _kind(value: Any) -> str:
    """Name the JSON kind of ``value`` for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


# ---------------------------------------------------------------------------------------------
# Type names and import

_type_cache: dict[str, type[Any]] = {}


def import_type(name: str) -> type[Any]:
    """Return the interface class named pkg/msg/Type, pkg/srv/Type, pkg/action/Type or pkg/Type."""
    cls = _type_cache.get(name)
    if cls is None:
        cls = _type_cache[name] = _import_type_uncached(name)
    return cls


def _import_type_uncached(name: str) -> type[Any]:
    match = _TYPE_NAME_RE.match(name) if isinstance(name, str) else None
    if match is None:
        raise UnknownTypeError(
            str(name), "expected 'pkg/msg/Type', 'pkg/srv/Type', 'pkg/action/Type' or 'pkg/Type'"
        )
    pkg, kind, type_name = match["pkg"], match["kind"] or "msg", match["name"]
    module = _import_interface_module(name, pkg, kind)
    cls = getattr(module, type_name, None)
    base = type_name.split("_", 1)[0]
    if cls is None and base != type_name and hasattr(module, base):
        # Service and action parts (Trigger_Request, Fibonacci_Goal, ...) live beside the base.
        cls = getattr(importlib.import_module(getattr(module, base).__module__), type_name, None)
    if not isinstance(cls, type) or not _is_interface_class(cls, kind):
        raise UnknownTypeError(name, f"package '{pkg}' has no {kind} type '{type_name}'")
    return cls


def _import_interface_module(name: str, pkg: str, kind: str) -> Any:
    # Look before importing: only packages that carry a generated <pkg>/<kind>/ are imported,
    # so a type name from a request cannot make us import an arbitrary installed package.
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise UnknownTypeError(name, f"ROS package '{pkg}' is not installed")
    locations = spec.submodule_search_locations
    if not any(os.path.isfile(os.path.join(loc, kind, "__init__.py")) for loc in locations):
        raise UnknownTypeError(name, f"package '{pkg}' has no {kind} interfaces")
    try:
        return importlib.import_module(f"{pkg}.{kind}")
    except ImportError as exc:
        raise UnknownTypeError(name, f"cannot import {pkg}.{kind}: {exc}") from exc


def _is_interface_class(cls: type, kind: str) -> bool:
    if hasattr(cls, "get_fields_and_field_types"):
        return True
    if kind == "srv":
        return hasattr(cls, "Request") and hasattr(cls, "Response")
    if kind == "action":
        return all(hasattr(cls, part) for part in ("Goal", "Result", "Feedback"))
    return False


def type_name_of(cls: Any) -> str:
    """Return the ``pkg/msg/Type`` (or ``srv``/``action``) name of an interface class."""
    if not isinstance(cls, type):
        cls = type(cls)
    parts = cls.__module__.split(".")
    if len(parts) < 2 or parts[1] not in _INTERFACE_KINDS:
        raise TypeError(f"{cls.__module__}.{cls.__qualname__} is not a ROS interface class")
    return f"{parts[0]}/{parts[1]}/{cls.__name__}"


def _ros_type_str(t: AbstractType) -> str:
    """Name a field type as a ``.msg`` file would (``float64``, ``std_msgs/msg/Header``...)."""
    if isinstance(t, BasicType):
        return _MSG_NAMES.get(t.typename, t.typename)
    if isinstance(t, NamespacedType):
        return "/".join((*t.namespaces, t.name))
    if isinstance(t, UnboundedString):
        return "string"
    if isinstance(t, BoundedString):
        return f"string<={t.maximum_size}"
    if isinstance(t, UnboundedWString):
        return "wstring"
    if isinstance(t, BoundedWString):
        return f"wstring<={t.maximum_size}"
    if isinstance(t, Array):
        return f"{_ros_type_str(t.value_type)}[{t.size}]"
    if isinstance(t, BoundedSequence):
        return f"{_ros_type_str(t.value_type)}[<={t.maximum_size}]"
    if isinstance(t, UnboundedSequence):
        return f"{_ros_type_str(t.value_type)}[]"
    raise TypeError(f"unsupported ROS field type {t!r}")


def _fields(cls: Any) -> list[tuple[str, AbstractType]]:
    return list(zip(cls.get_fields_and_field_types(), cls.SLOT_TYPES, strict=True))


def _nested_class(t: NamespacedType) -> type:
    return import_type("/".join((*t.namespaces, t.name)))


def _basic_name(t: AbstractType) -> str | None:
    """Return the normalized .msg name of a basic type, or None for other types."""
    return _MSG_NAMES.get(t.typename, t.typename) if isinstance(t, BasicType) else None


def _int_range(name: str) -> tuple[int, int] | None:
    if name in ("byte", "uint8", "uint16", "uint32", "uint64"):
        return 0, (1 << (8 if name == "byte" else int(name[4:]))) - 1
    bits = _INT_BITS.get(name)
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if bits else None


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


# ---------------------------------------------------------------------------------------------
# JSON Schema and field type maps

_schemas: dict[type, dict[str, Any]] = {}
_object_schemas: dict[type, dict[str, Any]] = {}
_type_maps: dict[type, dict[str, str]] = {}


def type_schema(cls: type) -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of a message class; cached, treat as read-only."""
    schema = _schemas.get(cls)
    if schema is None:
        schema = _schemas[cls] = {"$schema": JSON_SCHEMA_DIALECT, **_object_schema(cls)}
    return schema


def service_schemas(srv_cls: Any) -> dict[str, dict[str, Any]]:
    """Return the request and response schemas of a service class."""
    return {"request": type_schema(srv_cls.Request), "response": type_schema(srv_cls.Response)}


def action_schemas(action_cls: Any) -> dict[str, dict[str, Any]]:
    """Return the goal, result and feedback schemas of an action class."""
    return {
        "goal": type_schema(action_cls.Goal),
        "result": type_schema(action_cls.Result),
        "feedback": type_schema(action_cls.Feedback),
    }


def field_type_map(cls: type) -> dict[str, str]:
    """Map each field name to its ROS type as written in .msg files; cached, read-only."""
    types = _type_maps.get(cls)
    if types is None:
        types = _type_maps[cls] = {name: _ros_type_str(t) for name, t in _fields(cls)}
    return types


def _object_schema(cls: type) -> dict[str, Any]:
    schema = _object_schemas.get(cls)
    if schema is None:
        schema = {
            "type": "object",
            "properties": {name: _field_schema(t) for name, t in _fields(cls)},
            "additionalProperties": False,
            "x-ros-type": type_name_of(cls),
        }
        constants = _constants_of(cls)
        if constants:
            schema["x-ros-constants"] = constants
        _object_schemas[cls] = schema
    return schema


def _field_schema(t: AbstractType) -> dict[str, Any]:
    ros = _ros_type_str(t)
    if isinstance(t, NamespacedType):
        return _object_schema(_nested_class(t))
    if isinstance(t, AbstractNestedType):
        schema: dict[str, Any] = {"type": "array", "items": _field_schema(t.value_type)}
        if isinstance(t, Array):
            schema["minItems"] = schema["maxItems"] = t.size
        elif isinstance(t, BoundedSequence):
            schema["maxItems"] = t.maximum_size
    elif isinstance(t, (BoundedString, BoundedWString)):
        schema = {"type": "string", "maxLength": int(t.maximum_size)}
    elif isinstance(t, (UnboundedString, UnboundedWString)):
        schema = {"type": "string"}
    else:
        schema = _basic_schema(ros)
    schema["x-ros-type"] = ros
    return schema


def _basic_schema(name: str) -> dict[str, Any]:
    if name == "bool":
        return {"type": "boolean"}
    if name in ("float32", "float64"):
        return {"type": "number"}
    if name in ("char", "wchar"):
        return {"type": "string", "minLength": 1, "maxLength": 1}
    int_range = _int_range(name)
    if int_range is None:
        raise TypeError(f"unsupported ROS basic type {name!r}")
    return {"type": "integer", "minimum": int_range[0], "maximum": int_range[1]}


def _constants_of(cls: type) -> dict[str, Any]:
    # rclpy exposes constants as upper-case properties of the metaclass.
    names = [n for n in vars(type(cls)) if n.isupper() and not n.startswith("_")]
    return {n: _constant_to_json(getattr(cls, n)) for n in names}


def _constant_to_json(value: Any) -> Any:
    if isinstance(value, bytes) and len(value) == 1:  # byte constants
        return value[0]
    return to_jsonable(value)


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
