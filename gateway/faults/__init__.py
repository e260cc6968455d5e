"""Faults: the robot-side reporter and the gateway's fault manager.

The reporter lives in its own distribution, `diag-fault-reporter` (`robot_reporter/`), which a
robot installs into its own Python without any ROS wheel (docs/faults.md); it is re-exported
here for code that runs beside the gateway. Importing it pulls in nothing of the server.
"""

from .reporter import ACK_TOPIC, REPORT_TOPIC, FaultReporter, LocalFilter

__all__ = ["ACK_TOPIC", "REPORT_TOPIC", "FaultReporter", "LocalFilter"]
