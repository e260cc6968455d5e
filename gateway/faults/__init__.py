"""Faults: the robot-side reporter and the gateway's fault manager.

Robot nodes import `FaultReporter` from here (or from `gateway.faults.reporter`); nothing of
the gateway server is imported by doing so.
"""

from .reporter import ACK_TOPIC, REPORT_TOPIC, FaultReporter, LocalFilter

__all__ = ["ACK_TOPIC", "REPORT_TOPIC", "FaultReporter", "LocalFilter"]
