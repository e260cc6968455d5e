"""ROS 2 interface types: names, import, field introspection, the errors of conversions."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Mapping
from typing import Any

from rosidl_parser.definition import (
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
