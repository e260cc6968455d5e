"""Drop-in source mappings, the reporter's wire format and local filter (pure)."""

from __future__ import annotations

from gateway.faults.bridges import (
    GOAL_ABORTED,
    GOAL_CANCELED,
    GOAL_SUCCEEDED,
    Cooldown,
    GoalTracker,
    action_code,
    action_reports,
    diagnostic_report,
    normalize_message,
    resolve_logger,
    rosout_code,
    rosout_report,
    upper_snake,
)
from gateway.faults.model import FAILED, PASSED, Report
from gateway.faults.reporter import (
    LocalFilter,
    decode_ack,
    decode_reports,
    encode_ack,
    encode_reports,
)

NODES = ["/perception/lidar/lidar_sensor", "/powertrain/engine/temp_sensor", "/lidar_sensor"]


def test_upper_snake() -> None:
    assert upper_snake("motor temp") == "MOTOR_TEMP"
    assert upper_snake("lidar_sensor: Range check!") == "LIDAR_SENSOR_RANGE_CHECK"


def test_diagnostic_levels() -> None:
    assert diagnostic_report(0, "motor temp", "ok", "/n", {}) == Report(
        "MOTOR_TEMP", PASSED, 0, "", "/n")
    assert diagnostic_report(1, "motor temp", "warm", "/n", {}) == Report(
        "MOTOR_TEMP", FAILED, 1, "warm", "/n")
    assert diagnostic_report(2, "motor temp", "", "/n", {}).severity == 2  # type: ignore
    assert diagnostic_report(3, "motor temp", "", "/n", {}).severity == 3  # type: ignore
    assert diagnostic_report(7, "motor temp", "", "/n", {}) is None
    mapped = diagnostic_report(2, "motor temp", "hot", "/n", {"motor temp": "MOTOR_OVERHEAT"})
    assert mapped is not None and mapped.code == "MOTOR_OVERHEAT"


def test_logger_resolution_keeps_namespaced_nodes() -> None:
    assert resolve_logger("perception.lidar.lidar_sensor", NODES) == NODES[0]
    assert resolve_logger("lidar_sensor", NODES) == "/lidar_sensor"
    assert resolve_logger("perception.lidar.lidar_sensor.child", NODES) == NODES[0]
    assert resolve_logger("gone.node", NODES) == "/gone/node"


def test_rosout_code_hashes_the_normalized_message() -> None:
    assert normalize_message("temp 112.5 C >  110 C, id 0x1f") == "temp # C > # C, id #"
    a = rosout_code(NODES[0], "engine overheating: 112.3 C")
    b = rosout_code(NODES[0], "engine overheating: 117.9 C")
    c = rosout_code(NODES[0], "something else")
    assert a == b != c
    assert a.startswith("LOG_LIDAR_SENSOR_") and len(a) == len("LOG_LIDAR_SENSOR_") + 8
    assert all(ch in "0123456789ABCDEF" for ch in a[-8:])


def test_rosout_levels_and_cooldown() -> None:
    cd = Cooldown(5.0)
    assert rosout_report(20, "perception.lidar.lidar_sensor", "info", NODES, cd, 0) is None
    r = rosout_report(40, "perception.lidar.lidar_sensor", "bad 1", NODES, cd, 0.0)
    assert r is not None and r.severity == 2 and r.source == NODES[0] and r.event == FAILED
    assert rosout_report(40, "perception.lidar.lidar_sensor", "bad 2", NODES, cd, 4.9) is None
    assert rosout_report(40, "perception.lidar.lidar_sensor", "bad 3", NODES, cd, 5.0)
    assert rosout_report(30, "a", "w", NODES, cd, 0).severity == 1  # type: ignore[union-attr]
    assert rosout_report(50, "a", "f", NODES, cd, 0).severity == 3  # type: ignore[union-attr]
    assert rosout_report(40, "_diag_gateway", "own", NODES, cd, 0) is None


def test_goal_tracker_reports_each_outcome_once() -> None:
    t = GoalTracker(since_ns=1000)
    assert t.update([(b"old", GOAL_ABORTED, 500)]) == []  # finished before we started
    assert t.update([(b"g1", 2, 2000)]) == []  # executing
    assert t.update([(b"g1", GOAL_ABORTED, 2000)]) == [GOAL_ABORTED]
    assert t.update([(b"g1", GOAL_ABORTED, 2000)]) == []  # republished: not again
    assert t.update([(b"g1", GOAL_ABORTED, 2000), (b"g2", GOAL_SUCCEEDED, 3000)]) == [
        GOAL_SUCCEEDED]  # first seen finished, but accepted after the start


def test_action_reports() -> None:
    assert action_code("/powertrain/engine/long_calibration") == (
        "ACTION_LONG_CALIBRATION_ABORTED")
    reps = action_reports("/x/fib", [GOAL_ABORTED, GOAL_SUCCEEDED, GOAL_CANCELED], "/x/srv",
                          report_canceled=False)
    assert [(r.code, r.event, r.severity, r.source) for r in reps] == [
        ("ACTION_FIB_ABORTED", FAILED, 2, "/x/srv"), ("ACTION_FIB_ABORTED", PASSED, 0, "/x/srv")]
    reps = action_reports("/x/fib", [GOAL_CANCELED], "/x/srv", report_canceled=True)
    assert [(r.code, r.event) for r in reps] == [("ACTION_FIB_CANCELED", FAILED)]


def test_wire_round_trip() -> None:
    text = encode_reports("r1", "/a/n", [{"seq": 1, "code": "C", "event": "FAILED",
                                          "severity": 2, "description": "d", "stamp_ns": 5}])
    assert decode_reports(text) == ("r1", "/a/n", [{"seq": 1, "code": "C", "event": "FAILED",
                                                    "severity": 2, "description": "d",
                                                    "source": "/a/n"}])
    assert decode_ack(encode_ack("r1", [3, 1])) == ("r1", [1, 3])


def test_wire_rejects_garbage() -> None:
    assert decode_reports("not json") is None
    assert decode_reports('{"v": 2, "reporter": "r", "source": "s", "reports": []}') is None
    bad = ('{"v": 1, "reporter": "r", "source": "s", "reports": [{"seq": 1, "code": "",'
           ' "event": "FAILED"}, {"seq": "x", "code": "C", "event": "FAILED"},'
           ' {"seq": 2, "code": "C", "event": "MAYBE"}, {"seq": 3, "code": "C",'
           ' "event": "PASSED", "severity": 9}]}')
    decoded = decode_reports(bad)
    assert decoded is not None and [r["seq"] for r in decoded[2]] == [3]
    assert decoded[2][0]["severity"] == 3  # clamped
    assert decode_ack("[]") is None


def test_local_filter_forwards_repeated_low_severity_only() -> None:
    f = LocalFilter(threshold=3, window_sec=10.0)
    assert f.should_forward("E", 2, 0.0) and f.should_forward("C", 3, 0.0)
    assert [f.should_forward("W", 1, t) for t in (0.0, 1.0, 2.0)] == [False, False, True]
    assert [f.should_forward("W", 1, t) for t in (3.0, 4.0, 5.0)] == [False, False, True]
    # repeats spread wider than the window never reach the threshold
    assert [f.should_forward("I", 0, t) for t in (0.0, 11.0, 22.0, 33.0)] == [False] * 4
    f.should_forward("R", 0, 0.0)
    f.should_forward("R", 0, 1.0)
    f.reset("R")
    assert not f.should_forward("R", 0, 2.0)
    off = LocalFilter(enabled=False)
    assert off.should_forward("I", 0, 0.0)
