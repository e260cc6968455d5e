"""Unit tests for ros/interfaces/message.py: dict <-> message, JSON policy, schemas, type import."""

from __future__ import annotations

import array
import math
import pickle
import warnings
from typing import Any

import numpy
import orjson
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from rosidl_parser.definition import BasicType, BoundedSequence
from test_msgs.message_fixtures import get_test_msg

from gateway.ros.interfaces.message import (
    MessageFieldError,
    UnknownTypeError,
    action_schemas,
    default_value,
    dict_to_message,
    field_type_map,
    import_type,
    message_to_dict,
    service_schemas,
    to_jsonable,
    type_name_of,
    type_schema,
)

with warnings.catch_warnings():
    # rclpy loads type support through rosidl_generator_py, which imports lark, which imports
    # the deprecated sre_parse module; load it once here so filterwarnings=error stays on.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

STAMP = {"sec": 1700000000, "nanosec": 500}
HEADER = {"stamp": STAMP, "frame_id": "base_link"}

# (type name, JSON body); float values are exact in float32 so round trips compare equal.
ROUND_TRIP_CASES: list[tuple[str, dict[str, Any]]] = [
    ("std_msgs/msg/String", {"data": "héllo wörld ✓"}),
    ("std_msgs/Float32", {"data": -2.5}),
    ("std_msgs/msg/Bool", {"data": True}),
    ("sensor_msgs/msg/Temperature", {"header": HEADER, "temperature": 36.6, "variance": 0.0}),
    (
        "sensor_msgs/msg/LaserScan",
        {
            "header": HEADER,
            "angle_min": -1.5,
            "angle_max": 1.5,
            "angle_increment": 0.25,
            "time_increment": 0.0,
            "scan_time": 0.125,
            "range_min": 0.0625,
            "range_max": 30.0,
            "ranges": [1.0, 2.5, 0.125, 30.0],
            "intensities": [],
        },
    ),
    (
        "sensor_msgs/msg/Imu",
        {
            "header": HEADER,
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.7071, "w": 0.7071},
            "orientation_covariance": [0.1, 0, 0, 0, 0.1, 0, 0, 0, 0.1],
            "angular_velocity": {"x": 0.01, "y": -0.02, "z": 0.5},
            "linear_acceleration": {"z": 9.81},
        },
    ),
    (
        "sensor_msgs/msg/JointState",
        {
            "header": HEADER,
            "name": ["shoulder", "elbow"],
            "position": [0.5, -1.25],
            "velocity": [0.0, 0.1],
            "effort": [],
        },
    ),
    (
        "geometry_msgs/msg/Twist",
        {"linear": {"x": 0.5, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": -0.3}},
    ),
    (
        "geometry_msgs/msg/PoseStamped",
        {
            "header": HEADER,
            "pose": {
                "position": {"x": 1.0, "y": 2.0, "z": 0.0},
                "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
            },
        },
    ),
    (
        "diagnostic_msgs/msg/DiagnosticArray",
        {
            "header": HEADER,
            "status": [
                {
                    "level": 1,
                    "name": "motor: left",
                    "message": "hot",
                    "hardware_id": "m1",
                    "values": [{"key": "temp", "value": "81.5"}, {"key": "rpm", "value": "0"}],
                },
                {"level": 0, "name": "battery", "message": "", "hardware_id": "", "values": []},
            ],
        },
    ),
    ("std_srvs/srv/Trigger_Request", {}),
    ("std_srvs/srv/Trigger_Response", {"success": True, "message": "done"}),
    ("test_msgs/action/Fibonacci_Goal", {"order": 10}),
    ("test_msgs/action/Fibonacci_Result", {"sequence": [0, 1, 1, 2, 3, 5]}),
]

FIXTURE_TYPES = [
    "BasicTypes",
    "Arrays",
    "BoundedSequences",
    "UnboundedSequences",
    "Strings",
    "WStrings",
    "Nested",
    "MultiNested",
    "Constants",
    "Defaults",
    "Builtins",
]


def _merged(default: Any, data: Any) -> Any:
    """Overlay a partial JSON body on a default dict (lists replace, ints become floats)."""
    if isinstance(default, dict):
        return {k: _merged(v, data[k]) if k in data else v for k, v in default.items()}
    if isinstance(data, list) and isinstance(default, list):
        kind = type(default[0]) if default else None
        return [float(v) if kind is float else v for v in data]
    return float(data) if isinstance(default, float) else data


def _json_view(value: Any) -> Any:
    """What a client sees: the dict after an orjson round trip (NaN -> null)."""
    return orjson.loads(orjson.dumps(value))


def _wire_round_trip(msg: Any) -> dict[str, Any]:
    return message_to_dict(deserialize_message(serialize_message(msg), type(msg)))


# --------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize(
    ("type_name", "body"), ROUND_TRIP_CASES, ids=[c[0] for c in ROUND_TRIP_CASES]
)
def test_dict_message_dict_round_trip(type_name: str, body: dict[str, Any]) -> None:
    cls = import_type(type_name)
    msg = dict_to_message(cls, body)
    as_dict = message_to_dict(msg)
    assert as_dict == _merged(default_value(cls), body)
    assert _wire_round_trip(msg) == as_dict
    assert dict_to_message(cls, _json_view(as_dict)) == msg


@pytest.mark.parametrize("name", FIXTURE_TYPES)
def test_test_msgs_fixtures_round_trip(name: str) -> None:
    for original in get_test_msg(name):
        cls = type(original)
        as_json = _json_view(message_to_dict(original))
        rebuilt = dict_to_message(cls, as_json)
        assert _json_view(message_to_dict(rebuilt)) == as_json
        assert _json_view(_wire_round_trip(rebuilt)) == as_json


def test_fibonacci_goal_from_action_class() -> None:
    fibonacci = import_type("test_msgs/action/Fibonacci")
    goal = dict_to_message(fibonacci.Goal, {"order": 7})
    assert isinstance(goal, fibonacci.Goal)
    assert goal.order == 7
    assert message_to_dict(goal) == {"order": 7}


def test_absent_fields_keep_defaults() -> None:
    defaults = import_type("test_msgs/msg/Defaults")
    msg = dict_to_message(defaults, {"int8_value": 5})
    as_dict = message_to_dict(msg)
    assert as_dict["int8_value"] == 5
    assert as_dict["uint8_value"] == 200
    assert as_dict["byte_value"] == 50
    assert as_dict["bool_value"] is True


def test_default_value_of_temperature() -> None:
    temperature = import_type("sensor_msgs/msg/Temperature")
    assert default_value(temperature) == {
        "header": {"stamp": {"sec": 0, "nanosec": 0}, "frame_id": ""},
        "temperature": 0.0,
        "variance": 0.0,
    }


def test_numeric_arrays_get_the_storage_rclpy_uses() -> None:
    arrays = import_type("test_msgs/msg/Arrays")
    fixed = dict_to_message(arrays, {"float32_values": [1, 2.5, 3], "uint8_values": [1, 2, 255]})
    assert isinstance(fixed.float32_values, numpy.ndarray)
    assert fixed.float32_values.dtype == numpy.float32
    assert fixed.uint8_values.tolist() == [1, 2, 255]
    sequences = import_type("test_msgs/msg/UnboundedSequences")
    seq = dict_to_message(sequences, {"float64_values": [1, 2], "int64_values": [-(2**63)]})
    assert isinstance(seq.float64_values, array.array)
    assert seq.float64_values.tolist() == [1.0, 2.0]
    assert seq.int64_values.tolist() == [-(2**63)]


def test_ints_are_accepted_for_float_fields() -> None:
    msg = dict_to_message(import_type("std_msgs/msg/Float64"), {"data": 3})
    assert type(msg.data) is float
    assert msg.data == 3.0


def test_time_accepts_its_dict_form() -> None:
    time_cls = import_type("builtin_interfaces/msg/Time")
    msg = dict_to_message(time_cls, {"sec": 12, "nanosec": 34})
    assert (msg.sec, msg.nanosec) == (12, 34)
    header = dict_to_message(import_type("std_msgs/msg/Header"), {"stamp": {"sec": 5}})
    assert header.stamp.sec == 5


# --------------------------------------------------------------------------------------------
# JSON policy: bytes, chars, NaN, strings


def test_byte_and_char_fields_are_integers() -> None:
    basic = import_type("test_msgs/msg/BasicTypes")
    msg = dict_to_message(basic, {"byte_value": 200, "char_value": 65})
    assert msg.byte_value == b"\xc8"
    assert msg.char_value == 65
    as_dict = message_to_dict(msg)
    assert as_dict["byte_value"] == 200
    assert as_dict["char_value"] == 65


def test_byte_and_uint8_arrays_are_lists_of_ints() -> None:
    arrays = import_type("test_msgs/msg/Arrays")
    msg = dict_to_message(arrays, {"byte_values": [0, 1, 255], "char_values": [65, 66, 67]})
    assert msg.byte_values == [b"\x00", b"\x01", b"\xff"]
    as_dict = message_to_dict(msg)
    assert as_dict["byte_values"] == [0, 1, 255]
    assert as_dict["char_values"] == [65, 66, 67]
    assert as_dict["uint8_values"] == [0, 0, 0]
    sequences = import_type("test_msgs/msg/UnboundedSequences")
    from_bytes = dict_to_message(sequences, {"uint8_values": b"\x01\x02", "byte_values": b"\x03"})
    assert message_to_dict(from_bytes)["uint8_values"] == [1, 2]
    assert message_to_dict(from_bytes)["byte_values"] == [3]


def test_non_finite_floats_become_null() -> None:
    scan_cls = import_type("sensor_msgs/msg/LaserScan")
    scan = scan_cls(ranges=[1.0, math.nan, math.inf, -math.inf], range_max=math.nan)
    as_dict = message_to_dict(scan)
    body = orjson.loads(orjson.dumps(as_dict))
    assert body["ranges"] == [1.0, None, None, None]
    assert body["range_max"] is None
    assert to_jsonable(as_dict)["ranges"] == [1.0, None, None, None]
    assert to_jsonable(as_dict)["range_max"] is None


def test_null_in_a_float_field_means_nan() -> None:
    scan = dict_to_message(import_type("sensor_msgs/msg/LaserScan"), {"ranges": [1, None]})
    assert scan.ranges[0] == 1.0
    assert math.isnan(scan.ranges[1])
    imu = dict_to_message(import_type("sensor_msgs/msg/Imu"), {"orientation": {"w": None}})
    assert math.isnan(imu.orientation.w)


def test_to_jsonable_converts_python_and_numpy_values() -> None:
    value = {
        "text": "a\ud800b",
        "array": numpy.array([1.5, numpy.nan], dtype=numpy.float32),
        "seq": array.array("i", [1, 2]),
        "raw": b"\x00\xff",
        "scalar": numpy.int16(7),
        "msg": import_type("std_msgs/msg/Float64")(data=math.inf),
        "tuple": (1, "x"),
    }
    assert to_jsonable(value) == {
        "text": "a\ufffdb",
        "array": [1.5, None],
        "seq": [1, 2],
        "raw": [0, 255],
        "scalar": 7,
        "msg": {"data": None},
        "tuple": [1, "x"],
    }
    orjson.dumps(to_jsonable(value))


def test_wstrings_round_trip_as_strings() -> None:
    wstrings = import_type("test_msgs/msg/WStrings")
    body = {"wstring_value": "ハロー 😀", "bounded_sequence_of_wstrings": ["一", "二"]}
    msg = dict_to_message(wstrings, body)
    assert _wire_round_trip(msg)["wstring_value"] == "ハロー 😀"
    assert message_to_dict(msg)["bounded_sequence_of_wstrings"] == ["一", "二"]


class _IdlCharMsg:
    """Stand-in for a type written in .idl with IDL char/wchar (no such installed type)."""

    __module__ = "fake_msgs.msg._idl_char_msg"
    __slots__ = ("_c", "_w", "_cs")
    SLOT_TYPES = (BasicType("char"), BasicType("wchar"), BoundedSequence(BasicType("char"), 2))

    @classmethod
    def get_fields_and_field_types(cls) -> dict[str, str]:
        return {"c": "char", "w": "wchar", "cs": "sequence<char, 2>"}

    def __init__(self, **kwargs: Any) -> None:
        self.c = kwargs.get("c", "\x00")
        self.w = kwargs.get("w", "\x00")
        self.cs = kwargs.get("cs", [])

    c = property(lambda self: self._c, lambda self, v: setattr(self, "_c", v))
    w = property(lambda self: self._w, lambda self, v: setattr(self, "_w", v))
    cs = property(lambda self: self._cs, lambda self, v: setattr(self, "_cs", v))


def test_idl_char_and_wchar_are_one_character_strings() -> None:
    msg = dict_to_message(_IdlCharMsg, {"c": "A", "w": "€", "cs": ["x", "y"]})
    assert message_to_dict(msg) == {"c": "A", "w": "€", "cs": ["x", "y"]}
    bad: list[tuple[dict[str, Any], str]] = [
        ({"c": "€"}, "c"),
        ({"w": "ab"}, "w"),
        ({"c": 65}, "c"),
    ]
    for body, field in bad:
        with pytest.raises(MessageFieldError) as info:
            dict_to_message(_IdlCharMsg, body)
        assert info.value.field == field
    props = type_schema(_IdlCharMsg)["properties"]
    assert props["c"] == {"type": "string", "minLength": 1, "maxLength": 1, "x-ros-type": "char"}
    assert props["cs"]["x-ros-type"] == "char[<=2]"


# --------------------------------------------------------------------------------------------
# Validation errors

BASIC, ARRAYS, BOUNDED, STRINGS = (
    f"test_msgs/msg/{name}" for name in ("BasicTypes", "Arrays", "BoundedSequences", "Strings")
)
TEMP, SCAN = "sensor_msgs/msg/Temperature", "sensor_msgs/msg/LaserScan"
DIAG = "diagnostic_msgs/msg/DiagnosticArray"

# (type name, JSON body, expected field path, expected part of the reason)
ERROR_CASES: list[tuple[str, Any, str, str]] = [
    (TEMP, {"header": {"stamp": {"sec": "1"}}}, "header.stamp.sec", "expected int32, got string"),
    (TEMP, {"temperature": "hot"}, "temperature", "expected float64, got string"),
    (BASIC, {"int32_value": 1.5}, "int32_value", "expected int32, got float"),
    (BASIC, {"int64_value": 2.0}, "int64_value", "expected int64, got float"),
    (BASIC, {"uint8_value": 300}, "uint8_value", "out of range [0, 255]"),
    (BASIC, {"uint32_value": -1}, "uint32_value", "out of range"),
    (BASIC, {"int8_value": -129}, "int8_value", "out of range [-128, 127]"),
    (BASIC, {"uint64_value": 2**64}, "uint64_value", "out of range"),
    (BASIC, {"byte_value": 256}, "byte_value", "expected byte, got 256"),
    (BASIC, {"char_value": -1}, "char_value", "expected uint8, got -1"),
    (BASIC, {"int32_value": True}, "int32_value", "expected int32, got boolean"),
    (BASIC, {"float64_value": False}, "float64_value", "expected float64, got boolean"),
    (BASIC, {"bool_value": 1}, "bool_value", "expected bool, got integer"),
    (BASIC, {"bool_value": "true"}, "bool_value", "expected bool, got string"),
    (BASIC, {"float32_value": 1e39}, "float32_value", "out of range"),
    (BASIC, {"float64_value": 10**400}, "float64_value", "out of range"),
    (BASIC, {"nope": 1}, "nope", "unknown field"),
    (BASIC, {"check_fields": True}, "check_fields", "unknown field"),
    (
        STRINGS,
        {"bounded_string_value": "x" * 23},
        "bounded_string_value",
        "expected string<=22, got string of length 23",
    ),
    (STRINGS, {"string_value": 5}, "string_value", "expected string, got integer"),
    (STRINGS, {"string_value": "a\udc80"}, "string_value", "lone surrogate"),
    (
        BOUNDED,
        {"int32_values": [1, 2, 3, 4]},
        "int32_values",
        "expected int32[<=3], got array of length 4",
    ),
    (BOUNDED, {"string_values": ["a", 1]}, "string_values[1]", "expected string, got integer"),
    (
        ARRAYS,
        {"float64_values": [1.0, 2.0]},
        "float64_values",
        "expected float64[3], got array of length 2",
    ),
    (ARRAYS, {"uint8_values": [1, 2, 256]}, "uint8_values[2]", "out of range"),
    (ARRAYS, {"bool_values": [True, 0, False]}, "bool_values[1]", "expected bool, got integer"),
    (ARRAYS, {"byte_values": [0, 1, -1]}, "byte_values[2]", "out of range"),
    (ARRAYS, {"int16_values": [1, True, 3]}, "int16_values[1]", "expected int16, got boolean"),
    (
        ARRAYS,
        {"basic_types_values": [{}, {}, {"int8_value": 200}]},
        "basic_types_values[2].int8_value",
        "out of range",
    ),
    (SCAN, {"ranges": [1.0, 2.0, 3.0, "far"]}, "ranges[3]", "expected float32, got string"),
    (SCAN, {"ranges": [0.5, 1e39]}, "ranges[1]", "expected float32, got 1e+39 (out of range)"),
    (BOUNDED, {"uint8_values": b"\x01\x02\x03\x04"}, "uint8_values", "got array of length 4"),
    (SCAN, {"ranges": "1,2,3"}, "ranges", "expected float32[], got string"),
    (SCAN, {"ranges": {"0": 1.0}}, "ranges", "expected float32[], got object"),
    (TEMP, {"header": 5}, "header", "expected object (std_msgs/msg/Header), got integer"),
    (TEMP, {"header": None}, "header", "got null"),
    (TEMP, {"header": {"seq": 1}}, "header.seq", "unknown field"),
    (
        DIAG,
        {"status": [{"values": [{}, {"key": 5}]}]},
        "status[0].values[1].key",
        "expected string, got integer",
    ),
    (
        DIAG,
        {"status": [{"level": 3}, "x"]},
        "status[1]",
        "expected object (diagnostic_msgs/msg/DiagnosticStatus), got string",
    ),
    (
        "test_msgs/msg/MultiNested",
        {"array_of_arrays": [{}, {"int8_values": [1, 2, 999]}, {}]},
        "array_of_arrays[1].int8_values[2]",
        "expected int8, got 999",
    ),
]


@pytest.mark.parametrize(("type_name", "body", "field", "reason"), ERROR_CASES)
def test_invalid_values_name_the_field(type_name: str, body: Any, field: str, reason: str) -> None:
    with pytest.raises(MessageFieldError) as info:
        dict_to_message(import_type(type_name), body)
    assert info.value.field == field
    assert reason in info.value.reason
    assert str(info.value) == f"field '{field}': {info.value.reason}"
    assert isinstance(info.value, ValueError)


def test_error_message_format_and_path_prefix() -> None:
    temperature = import_type("sensor_msgs/msg/Temperature")
    with pytest.raises(MessageFieldError) as info:
        dict_to_message(temperature, {"header": {"stamp": {"sec": "x"}}})
    assert str(info.value) == "field 'header.stamp.sec': expected int32, got string"
    with pytest.raises(MessageFieldError) as info:
        dict_to_message(temperature, {"variance": "x"}, path="goal")
    assert info.value.field == "goal.variance"
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.field, copy.reason) == (info.value.field, info.value.reason)


def test_non_object_body_is_rejected() -> None:
    with pytest.raises(MessageFieldError) as info:
        dict_to_message(import_type("std_msgs/msg/String"), ["hello"])  # type: ignore[arg-type]
    assert info.value.field == ""
    assert info.value.reason == "expected object (std_msgs/msg/String), got array"


# --------------------------------------------------------------------------------------------
# Type names and import


def test_import_type_accepts_all_name_forms() -> None:
    string_cls = import_type("std_msgs/msg/String")
    assert import_type("std_msgs/String") is string_cls
    assert type_name_of(string_cls) == "std_msgs/msg/String"
    assert type_name_of(string_cls(data="x")) == "std_msgs/msg/String"
    trigger = import_type("std_srvs/srv/Trigger")
    assert type_name_of(trigger) == "std_srvs/srv/Trigger"
    assert import_type("std_srvs/srv/Trigger_Request") is trigger.Request
    fibonacci = import_type("test_msgs/action/Fibonacci")
    assert type_name_of(fibonacci.Goal) == "test_msgs/action/Fibonacci_Goal"
    assert import_type(type_name_of(fibonacci.Feedback)) is fibonacci.Feedback


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("no_such_msgs/msg/Thing", "ROS package 'no_such_msgs' is not installed"),
        ("std_msgs/msg/NoSuchType", "package 'std_msgs' has no msg type 'NoSuchType'"),
        ("std_msgs/srv/String", "package 'std_msgs' has no srv interfaces"),
        ("std_srvs/msg/Trigger", "package 'std_srvs' has no msg interfaces"),
        ("test_msgs/srv/Fibonacci", "package 'test_msgs' has no srv type 'Fibonacci'"),
        ("json/msg/Thing", "package 'json' has no msg interfaces"),
        ("String", "expected 'pkg/msg/Type'"),
        ("std_msgs/msg/String/x", "expected 'pkg/msg/Type'"),
        ("../std_msgs/String", "expected 'pkg/msg/Type'"),
    ],
)
def test_unknown_types_are_reported(name: str, reason: str) -> None:
    with pytest.raises(UnknownTypeError) as info:
        import_type(name)
    assert reason in str(info.value)
    assert name in str(info.value)
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------------------------
# Schemas


def test_temperature_schema() -> None:
    schema = type_schema(import_type("sensor_msgs/msg/Temperature"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert schema["x-ros-type"] == "sensor_msgs/msg/Temperature"
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert list(props) == ["header", "temperature", "variance"]
    assert props["temperature"] == {"type": "number", "x-ros-type": "float64"}
    header = props["header"]
    assert header["type"] == "object"
    assert header["x-ros-type"] == "std_msgs/msg/Header"
    assert header["properties"]["frame_id"] == {"type": "string", "x-ros-type": "string"}
    stamp = header["properties"]["stamp"]
    assert stamp["x-ros-type"] == "builtin_interfaces/msg/Time"
    assert stamp["properties"]["sec"] == {
        "type": "integer",
        "minimum": -(2**31),
        "maximum": 2**31 - 1,
        "x-ros-type": "int32",
    }
    assert stamp["properties"]["nanosec"]["maximum"] == 2**32 - 1


def test_arrays_schema() -> None:
    props = type_schema(import_type("test_msgs/msg/Arrays"))["properties"]
    assert props["uint8_values"] == {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 255, "x-ros-type": "uint8"},
        "minItems": 3,
        "maxItems": 3,
        "x-ros-type": "uint8[3]",
    }
    assert props["byte_values"]["items"]["x-ros-type"] == "byte"
    assert props["byte_values"]["items"]["maximum"] == 255
    assert props["int64_values"]["items"]["minimum"] == -(2**63)
    assert props["uint64_values"]["items"]["maximum"] == 2**64 - 1
    assert props["float32_values"]["items"] == {"type": "number", "x-ros-type": "float32"}
    assert props["bool_values"]["items"] == {"type": "boolean", "x-ros-type": "bool"}
    assert props["string_values"]["items"]["type"] == "string"
    nested = props["basic_types_values"]
    assert nested["x-ros-type"] == "test_msgs/msg/BasicTypes[3]"
    assert nested["items"]["type"] == "object"
    assert nested["items"]["properties"]["char_value"]["x-ros-type"] == "uint8"


def test_sequence_and_string_bounds_in_schema() -> None:
    bounded = type_schema(import_type("test_msgs/msg/BoundedSequences"))["properties"]
    assert bounded["int32_values"]["maxItems"] == 3
    assert "minItems" not in bounded["int32_values"]
    assert bounded["int32_values"]["x-ros-type"] == "int32[<=3]"
    unbounded = type_schema(import_type("test_msgs/msg/UnboundedSequences"))["properties"]
    assert "maxItems" not in unbounded["float64_values"]
    assert unbounded["float64_values"]["x-ros-type"] == "float64[]"
    strings = type_schema(import_type("test_msgs/msg/Strings"))["properties"]
    assert strings["bounded_string_value"] == {
        "type": "string",
        "maxLength": 22,
        "x-ros-type": "string<=22",
    }
    wstrings = type_schema(import_type("test_msgs/msg/WStrings"))["properties"]
    assert wstrings["wstring_value"]["x-ros-type"] == "wstring"


def test_schema_lists_constants_and_is_cached() -> None:
    status = import_type("diagnostic_msgs/msg/DiagnosticStatus")
    schema = type_schema(status)
    assert schema["x-ros-constants"] == {"OK": 0, "WARN": 1, "ERROR": 2, "STALE": 3}
    assert schema["properties"]["level"]["x-ros-type"] == "byte"
    assert type_schema(status) is schema
    assert "x-ros-constants" not in type_schema(import_type("std_msgs/msg/String"))


def test_service_and_action_schemas() -> None:
    trigger = service_schemas(import_type("std_srvs/srv/Trigger"))
    assert set(trigger) == {"request", "response"}
    assert trigger["request"]["properties"] == {}
    assert trigger["response"]["properties"]["success"]["type"] == "boolean"
    fibonacci = action_schemas(import_type("test_msgs/action/Fibonacci"))
    assert set(fibonacci) == {"goal", "result", "feedback"}
    assert fibonacci["goal"]["x-ros-type"] == "test_msgs/action/Fibonacci_Goal"
    assert fibonacci["result"]["properties"]["sequence"]["x-ros-type"] == "int32[]"


def test_field_type_map() -> None:
    assert field_type_map(import_type("sensor_msgs/msg/Temperature")) == {
        "header": "std_msgs/msg/Header",
        "temperature": "float64",
        "variance": "float64",
    }
    imu = field_type_map(import_type("sensor_msgs/msg/Imu"))
    assert imu["orientation_covariance"] == "float64[9]"
    basic = field_type_map(import_type("test_msgs/msg/BasicTypes"))
    assert basic["byte_value"] == "byte"
    assert basic["bool_value"] == "bool"
    assert basic["float32_value"] == "float32"
    assert field_type_map(import_type("std_srvs/srv/Trigger_Response")) == {
        "success": "bool",
        "message": "string",
    }
