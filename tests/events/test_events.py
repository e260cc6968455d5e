"""Event bus: delivery by kind, unsubscribe, a failing listener kept and logged, typed bodies."""

from __future__ import annotations

import logging

import pytest

from gateway.events import (
    DATA,
    ENTITIES,
    FAULTS,
    GRAPH,
    LOGS,
    EntitiesChanged,
    Event,
    EventBus,
    GraphChanged,
    body_of,
)
from gateway.ros.graph.snapshot import GraphSnapshot, NodeInfo


def test_delivers_by_kind_in_order_and_unsubscribes() -> None:
    bus = EventBus()
    seen: list[tuple[str, str]] = []
    off = bus.subscribe([DATA], lambda e: seen.append(("a", e.resource)))
    bus.subscribe([DATA, FAULTS], lambda e: seen.append(("b", e.resource)))
    bus.publish(Event(DATA, "temp_sensor", "/t", "sample", None))
    bus.publish(Event(FAULTS, "lidar", "LIDAR_FAIL", "created", None))
    off()
    off()  # a second call changes nothing
    bus.publish(Event(DATA, "temp_sensor", "/u", "sample", None))
    assert seen == [("a", "/t"), ("b", "/t"), ("b", "LIDAR_FAIL"), ("b", "/u")]
    assert bus.has_listeners(DATA) and not bus.has_listeners(LOGS)
    assert bus.stats() == {"published": 3, "listener_errors": 0, "listeners": 2}


def test_a_failing_listener_is_logged_and_kept(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    seen: list[str] = []
    failed: list[str] = []

    def bad(e: Event[object]) -> None:
        failed.append(e.resource)
        raise RuntimeError("boom")

    bus.subscribe([DATA], bad)
    bus.subscribe([DATA], lambda e: seen.append(e.resource))
    with caplog.at_level(logging.ERROR, logger="gateway.events"):
        bus.publish(Event(DATA, None, "/t", "sample", None))
        bus.publish(Event(DATA, None, "/u", "sample", None))
    assert seen == ["/t", "/u"] and failed == ["/t", "/u"]  # still subscribed after raising
    assert bus.stats()["listener_errors"] == 2
    assert [r.getMessage() for r in caplog.records if r.exc_info] == [
        f"event listener {bad!r} failed on data//t", f"event listener {bad!r} failed on data//u"]


def test_unknown_kind_refused_and_nothing_subscribed() -> None:
    bus = EventBus()
    with pytest.raises(ValueError, match="unknown event kind"):
        bus.subscribe([DATA, "nope"], lambda e: None)
    assert not bus.has_listeners(DATA)
    with pytest.raises(ValueError, match="unknown event kind"):
        bus.publish(Event("nope", None, "x", "created", None))


def test_the_body_a_trigger_sees() -> None:
    typed = Event(ENTITIES, None, "manifest", "reloaded", EntitiesChanged(7))
    assert body_of(typed) == {"generation": 7}
    assert body_of(Event(FAULTS, "cam", "F1", "created", {"fault_code": "F1"})) == {
        "fault_code": "F1"}  # a plugin's event carries its JSON body itself


def test_a_graph_change_reaches_its_listeners_and_no_trigger() -> None:
    bus = EventBus()
    snapshots: list[GraphSnapshot] = []
    bus.subscribe([GRAPH], lambda e: snapshots.append(e.payload.snapshot))
    snap = GraphSnapshot((NodeInfo("talker", "/"),))
    event = Event(GRAPH, None, "ros", "changed", GraphChanged(snap))
    bus.publish(event)
    assert snapshots == [snap]
    assert body_of(event) is None  # nothing a trigger observes
