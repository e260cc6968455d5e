"""Freeze frame topic selection, the scope rule and the JSON shapes of faults."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.faults import views
from gateway.faults.model import CONFIRMED, ERROR, FaultRecord
from gateway.faults.scope import in_scope, owns
from gateway.faults.snapshots import (
    SnapshotConfigError,
    entity_default_topics,
    freeze_frame,
    load_config,
    parse_config,
    primary_value,
    select_topics,
    stored_frame,
)
from gateway.model.timestamps import iso

CONFIG = {
    "fault_specific": {"LIDAR_RANGE_INVALID": ["/perception/lidar/scan"]},
    "patterns": {"LIDAR_.*": ["/a"], "MOTOR_[0-9]+": ["/b", "/c"], ".*": ["/catch_all"]},
    "default_topics": ["/file_default"],
}


def test_exact_code_wins_over_patterns() -> None:
    cfg = parse_config(CONFIG)
    assert select_topics("LIDAR_RANGE_INVALID", cfg) == (["/perception/lidar/scan"],
                                                         "fault_specific")


def test_first_matching_pattern_wins() -> None:
    cfg = parse_config(CONFIG)
    assert select_topics("LIDAR_FREQ", cfg) == (["/a"], "pattern")
    assert select_topics("MOTOR_12", cfg) == (["/b", "/c"], "pattern")
    assert select_topics("MOTOR_X", cfg) == (["/catch_all"], "pattern")  # full match only


def test_default_topics_then_entity_default() -> None:
    cfg = parse_config({"fault_specific": {"A": ["/x"]}, "default_topics": ["/file"]})
    assert select_topics("B", cfg) == (["/file"], "default_topics")
    # the setting wins over the file's list; a comma-separated string is accepted
    cfg = parse_config({"default_topics": ["/file"]}, default_topics="/s1,/s2")
    assert select_topics("B", cfg) == (["/s1", "/s2"], "default_topics")
    cfg = parse_config({})
    own = ["/n/scan", "/rosout", "/parameter_events", "/n/_hidden/x", "/n/status"]
    assert select_topics("B", cfg, own) == (["/n/scan", "/n/status"], "entity_default")
    cfg = parse_config({}, entity_default=False)
    assert select_topics("B", cfg, own) == ([], "none")


def test_entity_default_caps_at_sixteen() -> None:
    topics = [f"/t{i:02d}" for i in range(40)]
    assert entity_default_topics(topics) == topics[:16]


def test_config_file(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("fault_specific:\n  A: [/x]\npatterns:\n  'B.*': /y\n")
    cfg = load_config(path)
    assert select_topics("A", cfg)[0] == ["/x"] and select_topics("BB", cfg)[0] == ["/y"]
    assert select_topics("C", load_config(None, ["/d"]))[0] == ["/d"]
    path.write_text("patterns:\n  '(': [/x]\n")
    with pytest.raises(SnapshotConfigError):
        load_config(path)
    with pytest.raises(SnapshotConfigError):
        load_config(tmp_path / "missing.yaml")


def test_primary_value_and_frame_shape() -> None:
    assert primary_value({"data": 3.5}) == 3.5
    assert primary_value({"data": True, "other": 1}) is True
    msg = {"temperature": 90.0, "variance": 0.25}
    assert primary_value(msg) == msg
    frame = stored_frame("/t", "sensor_msgs/msg/Temperature", msg, 1_700_000_000 * 10**9,
                         origin="startup")
    entry = freeze_frame("x-acme", frame, iso)
    assert entry == {
        "type": "freeze_frame", "name": "/t", "data": msg,
        "x-acme": {"topic": "/t", "message_type": "sensor_msgs/msg/Temperature",
                   "full_data": msg, "captured_at": "2023-11-14T22:13:20.000Z",
                   "capture_origin": "startup"},
    }
    assert "capture_origin" not in freeze_frame("x-v", stored_frame("/t", "T", {}, 0), iso)["x-v"]


def test_scope_rule() -> None:
    lidar = "/perception/lidar/lidar_sensor"
    assert owns(lidar, lidar) and owns(lidar, lidar + "/child")
    assert not owns(lidar, lidar + "_2") and not owns(lidar, "/perception/lidar")
    assert in_scope([lidar], [lidar])
    assert in_scope([lidar, lidar + "/child"], [lidar])  # own and child
    assert not in_scope([lidar, "/powertrain/engine/temp_sensor"], [lidar])  # mixed
    assert in_scope([lidar, "/powertrain/engine/temp_sensor"],
                    [lidar, "/powertrain/engine/temp_sensor"])
    assert not in_scope([], [lidar]) and not in_scope([lidar], [])


def fault() -> FaultRecord:
    return FaultRecord(code="C", severity=ERROR, description="broken", status=CONFIRMED,
                       counter=-1, occurrence_count=2, first_ns=10**18, last_ns=2 * 10**18,
                       confirmed_ns=10**18, sources=["/a/n", "/b/m"])


def test_list_item_detail_and_event_shapes() -> None:
    item = views.list_item("x-v", fault())
    assert {k: item[k] for k in ("fault_code", "severity", "message", "source")} == {
        "fault_code": "C", "severity": "ERROR", "message": "broken", "source": "/a/n"}
    assert item["timestamp"] == iso(2 * 10**18)
    assert item["x-v"]["reporting_sources"] == ["/a/n", "/b/m"]
    d = views.detail("x-v", fault(), [])
    assert d["item"] == {"code": "C", "fault_name": "broken", "severity": 2,
                         "status": {"aggregatedStatus": "active", "testFailed": "1",
                                    "confirmedDTC": "1", "pendingDTC": "0"}}
    assert d["environment_data"] == {
        "extended_data_records": {"first_occurrence": iso(10**18),
                                  "last_occurrence": iso(2 * 10**18)},
        "snapshots": []}
    assert d["x-v"]["occurrence_count"] == 2 and d["x-v"]["severity_label"] == "ERROR"
    ev = views.event("x-v", "fault_confirmed", fault(), 0, ("app", "n"), ["S"])
    assert ev["event_type"] == "fault_confirmed" and ev["fault"] == item
    assert ev["x-v"] == {"entity_type": "app", "entity_id": "n"}
    assert ev["auto_cleared_codes"] == ["S"]
    assert "x-v" not in views.event("x-v", "fault_cleared", fault(), 0)
