"""Interface packages loaded lazily: a type's module is imported when the type is first read."""

from __future__ import annotations

import subprocess
import sys

from gateway.ros.interfaces.lazy_interfaces import types_of

GENERATED = (
    "from sensor_msgs.msg._imu import Imu  # noqa: F401\n"
    "from sensor_msgs.msg._temperature import Temperature  # noqa: F401\n"
)


def test_a_generated_init_maps_each_type_to_its_module() -> None:
    assert types_of(GENERATED, "sensor_msgs.msg") == {
        "Imu": "sensor_msgs.msg._imu", "Temperature": "sensor_msgs.msg._temperature"}


def test_any_other_init_is_imported_as_usual() -> None:
    assert types_of(GENERATED + "CONSTANT = 1\n", "sensor_msgs.msg") is None
    assert types_of("from os import path  # noqa: F401\n", "sensor_msgs.msg") is None
    assert types_of(GENERATED, "std_msgs.msg") is None  # another package's modules
    assert types_of("", "sensor_msgs.msg") is None


_CHILD = """
import sys
import gateway.ros  # installs the finder, before rclpy
import rclpy.serialization
import sensor_msgs.msg
from sensor_msgs.msg import Temperature
from std_srvs.srv import Trigger
from gateway.ros.interfaces.msgtypes import import_type

print("sensor_msgs.msg._imu" in sys.modules, "sensor_msgs.msg._battery_state" in sys.modules)
print(Temperature is sys.modules["sensor_msgs.msg._temperature"].Temperature,
      import_type("sensor_msgs/msg/Imu") is sensor_msgs.msg.Imu, "Imu" in dir(sensor_msgs.msg))
msg = Temperature(temperature=21.5)
msg.header.frame_id = "engine"
back = rclpy.serialization.deserialize_message(rclpy.serialization.serialize_message(msg),
                                               Temperature)
print(back.temperature, back.header.frame_id, Trigger.Request().__class__.__name__)
try:
    sensor_msgs.msg.NoSuchType
except AttributeError:
    print("AttributeError")
ns = {}
exec("from std_msgs.msg import *", ns)
print("Header" in ns and "ColorRGBA" in ns)
"""


def test_types_load_on_first_read_and_are_the_usual_classes() -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out == ["False False", "True True True", "21.5 engine Trigger_Request",
                   "AttributeError", "True"]
