"""Fault windows and topic choice (pure)."""

from __future__ import annotations

import re

from recorder.index import ID_PATTERN
from recorder.selection import TopicChoice
from recorder.windows import MAX_ATTACHED, Windows, new_recording_id

S = 1_000_000_000


def ids() -> object:
    counter = iter(range(1000))
    return lambda now: f"rec_{next(counter)}"


def test_recording_ids_sort_by_time_and_match_the_index_pattern() -> None:
    a = new_recording_id(1_700_000_000_123_000_000, "abc123")
    assert a == "rec_20231114T221320123Z_abc123"
    assert ID_PATTERN.match(a)
    b = new_recording_id(1_700_000_001_000_000_000)
    assert b > a and re.fullmatch(r"[A-Za-z0-9_-]+", b)


def test_first_confirmation_opens_a_window_around_it() -> None:
    w = Windows(5 * S, 1 * S, ids())
    win, new = w.on_confirm("A", ["/n/a"], 100 * S)
    assert new and (win.start_ns, win.trigger_ns, win.end_ns) == (95 * S, 100 * S, 101 * S)
    assert win.codes == ["A"] and win.sources == {"A": ["/n/a"]}


def test_faults_confirming_inside_the_window_share_it() -> None:
    w = Windows(5 * S, 1 * S, ids())
    first, _ = w.on_confirm("A", ["/n/a"], 100 * S)
    second, new = w.on_confirm("B", ["/n/b"], 100 * S + S // 2)
    assert second is first and not new
    assert first.codes == ["A", "B"] and first.end_ns == 101 * S  # the end does not move
    third, new = w.on_confirm("C", ["/n/c"], 102 * S)
    assert new and third is not first


def test_at_most_32_faults_join_beyond_the_first() -> None:
    w = Windows(5 * S, 10 * S, ids())
    first, _ = w.on_confirm("F0", [], 0)
    for i in range(1, MAX_ATTACHED + 1):
        assert w.on_confirm(f"F{i}", [], i)[0] is first
    assert first.full and len(first.codes) == 33
    overflow, new = w.on_confirm("F33", [], 40)
    assert new and overflow is not first
    assert w.on_confirm("F34", [], 41)[0] is overflow


def test_a_fault_already_attached_merges_sources() -> None:
    w = Windows(S, S, ids())
    win, _ = w.on_confirm("A", ["/x"], 0)
    again, new = w.on_confirm("A", ["/y"], 10)
    assert again is win and not new and win.codes == ["A"] and win.sources["A"] == ["/x", "/y"]


def test_due_windows_leave_and_detach_cancels_empty_ones() -> None:
    w = Windows(S, S, ids())
    a, _ = w.on_confirm("A", [], 0)
    b, _ = w.on_confirm("B", [], 5 * S)
    assert w.next_end() == S
    assert w.due(S - 1) == [] and w.due(S) == [a] and w.open == [b]
    b.codes.append("C")
    assert w.detach("B") == [] and b.codes == ["C"]
    assert w.detach("C") == [b] and w.open == []
    w.on_confirm("D", [], 9 * S)
    assert len(w.close_all()) == 1 and w.open == [] and w.next_end() is None


NODES = {
    "/perception/lidar/lidar_sensor": [("/perception/lidar/scan", "sensor_msgs/msg/LaserScan"),
                                       ("/rosout", "rcl_interfaces/msg/Log"),
                                       ("/parameter_events", "rcl_interfaces/msg/ParameterEvent")],
    "/powertrain/engine/temp_sensor": [("/powertrain/engine/temperature",
                                        "sensor_msgs/msg/Temperature"),
                                       ("/powertrain/engine/_hidden", "std_msgs/msg/String")],
    "/tf_pub": [("/tf", "tf2_msgs/msg/TFMessage")],
}


def test_node_mode_buffers_everything_and_records_the_faulting_nodes_topics() -> None:
    choice = TopicChoice()
    assert choice.buffered(NODES) == {
        "/perception/lidar/scan": "sensor_msgs/msg/LaserScan",
        "/powertrain/engine/temperature": "sensor_msgs/msg/Temperature",
        "/tf": "tf2_msgs/msg/TFMessage"}
    assert choice.recorded(["/perception/lidar/lidar_sensor"], NODES) == {
        "/perception/lidar/scan", "/tf"}
    assert choice.recorded(["/unknown"], NODES) == {"/tf"}


def test_lazy_start_buffers_only_armed_nodes() -> None:
    choice = TopicChoice()
    assert choice.buffered(NODES, armed=set()) == {}
    assert set(choice.buffered(NODES, armed={"/powertrain/engine/temp_sensor"})) == {
        "/powertrain/engine/temperature", "/tf"}


def test_all_and_explicit_modes_and_exclusions() -> None:
    everything = TopicChoice(mode="all", exclude=frozenset({"/tf"}))
    assert "/tf" not in everything.buffered(NODES)
    assert everything.recorded(["/x"], NODES) is None
    explicit = TopicChoice(mode="explicit", topics=("/powertrain/engine/temperature",),
                           include=())
    assert explicit.buffered(NODES) == {
        "/powertrain/engine/temperature": "sensor_msgs/msg/Temperature"}
    assert explicit.recorded(["/perception/lidar/lidar_sensor"], NODES) == {
        "/powertrain/engine/temperature"}
