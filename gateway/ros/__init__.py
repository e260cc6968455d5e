"""The ROS bridge, by concern: the only code that imports rclpy."""

import sys

from ..process.deferred import defer
from .interfaces import lazy_interfaces

# rclpy imports numpy (through service_msgs); only messages with fixed-size numeric arrays
# built as Python objects use it (gateway/process/deferred.py): about 6 MiB and 0.1 s CPU at start.
defer("numpy")
# Message classes import rosidl_generator_py for its type-support loader; its package also
# tries to import the code generator (lark grammar, about 2 MiB), which the gateway never runs
# and the package treats as optional: left out.
if "rosidl_generator_py" not in sys.modules:
    sys.modules.setdefault("rosidl_generator_py.generate_py_impl", None)  # type: ignore[arg-type]
# Generated interface packages import every type of the package; the gateway reads a few
# (gateway/ros/interfaces/lazy_interfaces.py): each type's module is imported when first read.
lazy_interfaces.install()
