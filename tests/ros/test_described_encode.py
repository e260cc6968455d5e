"""JSON -> CDR from .msg definitions, checked against rclpy's (de)serializer (bytes compared
but for alignment padding, which Fast CDR leaves as it finds it)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

from rclpy.serialization import deserialize_message, serialize_message
from rosidl_adapter.parser import parse_message_string

from gateway._fast import converter_for_definition
from gateway.ros.interfaces.described import SECTION
from gateway.ros.interfaces.described_encode import Encoder
from gateway.ros.interfaces.message import dict_to_message, import_type
from gateway.ros.interfaces.msgtypes import MessageFieldError

SHARE = Path(sys.prefix) / "share"


def definition(type_name: str) -> str:
    """The rosbag2-style definition of an installed type, from its .msg files."""
    texts: dict[str, str] = {}
    todo = [type_name]
    while todo:
        name = todo.pop()
        if name in texts:
            continue
        pkg, _, short = name.split("/")
        texts[name] = (SHARE / pkg / "msg" / f"{short}.msg").read_text()
        for f in parse_message_string(pkg, short, texts[name]).fields:
            if not f.type.is_primitive_type():
                todo.append(f"{f.type.pkg_name}/msg/{f.type.type}")
    return texts[type_name] + "".join(SECTION.format(name=n) + t for n, t in texts.items()
                                      if n != type_name)


CASES: list[tuple[str, dict[str, Any]]] = [
    ("geometry_msgs/msg/PoseStamped", {"header": {"frame_id": "map", "stamp": {"sec": 3}},
                                       "pose": {"position": {"x": 1.5}}}),
    ("sensor_msgs/msg/LaserScan", {"ranges": [1.0, 2.5], "angle_min": -1.0,
                                   "header": {"frame_id": "lidar"}, "intensities": []}),
    ("geometry_msgs/msg/PoseWithCovarianceStamped", {"pose": {"covariance": [0.5] * 36}}),
    ("diagnostic_msgs/msg/DiagnosticArray", {"status": [
        {"level": 2, "name": "a", "values": [{"key": "k", "value": "v"}]}, {"name": "b"}]}),
    ("sensor_msgs/msg/Imu", {}),
    ("std_msgs/msg/Int8MultiArray", {"data": [-1, 2, 127],
                                     "layout": {"dim": [{"label": "x", "size": 3}]}}),
]


@pytest.mark.parametrize(("type_name", "fields"), CASES, ids=[c[0] for c in CASES])
def test_bytes_match_rclpy(type_name: str, fields: dict[str, Any]) -> None:
    cls = import_type(type_name)
    msg = dict_to_message(cls, fields)
    expected = serialize_message(msg)
    encoded = Encoder(type_name, definition(type_name)).encode(fields)
    assert len(encoded) == len(expected)
    assert deserialize_message(encoded, cls) == msg
    # and the converter reads it back
    assert converter_for_definition(type_name, definition(type_name)).to_json(encoded)


@pytest.mark.parametrize(("fields", "field"), [
    ({"header": {"frame": "x"}}, "header.frame"),
    ({"pose": {"position": {"x": "far"}}}, "pose.position.x"),
    ({"header": {"stamp": {"sec": 1 << 40}}}, "header.stamp.sec"),
    ({"header": []}, "header"),
])
def test_bad_values_name_the_field(fields: dict[str, Any], field: str) -> None:
    enc = Encoder("geometry_msgs/msg/PoseStamped", definition("geometry_msgs/msg/PoseStamped"))
    with pytest.raises(MessageFieldError) as err:
        enc.encode(fields)
    assert err.value.field == field


def test_fixed_array_length_is_checked() -> None:
    name = "geometry_msgs/msg/PoseWithCovariance"
    with pytest.raises(MessageFieldError, match="expected 36 elements"):
        Encoder(name, definition(name)).encode({"covariance": [0.0] * 3})
