"""JSON Schemas and field type maps of ROS 2 interface types."""

from __future__ import annotations

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

from .msg_output import to_jsonable
from .msgtypes import (
    JSON_SCHEMA_DIALECT,
    _fields,
    _int_range,
    _nested_class,
    _ros_type_str,
    type_name_of,
)

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
