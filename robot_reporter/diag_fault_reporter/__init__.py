"""Report faults from a ROS 2 node to a diag-gateway; uses the robot's own rclpy."""

from .reporter import (
    ACK_TOPIC,
    CRITICAL,
    ERROR,
    FAILED,
    INFO,
    PASSED,
    REPORT_TOPIC,
    WARN,
    FaultReporter,
    LocalFilter,
)

__version__ = "0.1.0"
__all__ = ["ACK_TOPIC", "CRITICAL", "ERROR", "FAILED", "INFO", "PASSED", "REPORT_TOPIC", "WARN",
           "FaultReporter", "LocalFilter"]
