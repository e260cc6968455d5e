"""A /rosout line that names the fault code its node reports is that fault, not a second one."""

from __future__ import annotations

from gateway.faults.bridges import Cooldown, rosout_code, rosout_report
from gateway.faults.model import ERROR, FAILED

NODES = ["/perception/lidar/lidar_sensor"]
LOGGER = "perception.lidar.lidar_sensor"


def test_a_tagged_line_reports_its_code_with_the_reporters_message() -> None:
    text = "min_range (10.0) must be less than max_range (5.0)"
    report = rosout_report(40, LOGGER, f"[LIDAR_RANGE_INVALID] {text}", NODES, Cooldown(5.0), 0.0)
    assert report is not None
    assert (report.code, report.event, report.severity, report.description, report.source) == (
        "LIDAR_RANGE_INVALID", FAILED, ERROR, text, NODES[0])


def test_untagged_lines_keep_the_log_code_and_tags_cool_down_per_node() -> None:
    cd = Cooldown(5.0)
    plain = rosout_report(40, LOGGER, "scan [rate] dropped", NODES, cd, 0.0)
    assert plain is not None and plain.code == rosout_code(NODES[0], "scan [rate] dropped")
    assert rosout_report(40, LOGGER, "[LIDAR_X] a", NODES, cd, 0.0) is not None
    assert rosout_report(40, LOGGER, "[LIDAR_X] a", NODES, cd, 1.0) is None  # cooling down
    other = rosout_report(40, "other.node", "[LIDAR_X] a", ["/other/node"], cd, 1.0)
    assert other is not None and other.source == "/other/node"


def test_without_code_tags_every_line_keeps_the_log_code() -> None:
    line = "[LIDAR_RANGE_INVALID] min_range (10.0) must be less than max_range (5.0)"
    report = rosout_report(40, LOGGER, line, NODES, Cooldown(5.0), 0.0, code_tags=False)
    assert report is not None
    assert (report.code, report.description) == (rosout_code(NODES[0], line), line)
