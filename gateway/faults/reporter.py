"""FaultReporter and its wire format: the robot-side distribution `diag_fault_reporter`
(robot_reporter/ in this repository), re-exported for the gateway and its nodes."""

from diag_fault_reporter.reporter import (
    ACK_TOPIC,
    BATCH_MAX,
    COALESCE_SEC,
    CRITICAL,
    ERROR,
    FAILED,
    INFO,
    PASSED,
    QUEUE_DEPTH,
    REPORT_TOPIC,
    WARN,
    WIRE_VERSION,
    FaultReporter,
    LocalFilter,
    decode_ack,
    decode_reports,
    encode_ack,
    encode_reports,
)

__all__ = ["ACK_TOPIC", "BATCH_MAX", "COALESCE_SEC", "CRITICAL", "ERROR", "FAILED", "INFO",
           "PASSED", "QUEUE_DEPTH", "REPORT_TOPIC", "WARN", "WIRE_VERSION", "FaultReporter",
           "LocalFilter", "decode_ack", "decode_reports", "encode_ack", "encode_reports"]
