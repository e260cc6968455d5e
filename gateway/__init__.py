"""Diagnostic gateway: SOVD-style HTTP/JSON access to a ROS 2 robot."""

__version__ = "0.1.0"
