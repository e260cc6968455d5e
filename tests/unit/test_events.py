"""Event bus: delivery by kind, unsubscribe, a failing listener isolated."""

from __future__ import annotations

import pytest

from gateway.events import DATA, FAULTS, Event, EventBus


def test_delivers_by_kind_in_order_and_unsubscribes() -> None:
    bus = EventBus()
    seen: list[tuple[str, str]] = []
    off = bus.subscribe([DATA], lambda e: seen.append(("a", e.resource)))
    bus.subscribe([DATA, FAULTS], lambda e: seen.append(("b", e.resource)))
    bus.publish(Event(DATA, "temp_sensor", "/t", "sample"))
    bus.publish(Event(FAULTS, "lidar", "LIDAR_FAIL", "created"))
    off()
    bus.publish(Event(DATA, "temp_sensor", "/u", "sample"))
    assert seen == [("a", "/t"), ("b", "/t"), ("b", "LIDAR_FAIL"), ("b", "/u")]
    assert bus.has_listeners(DATA) and bus.stats()["published"] == 3


def test_failing_listener_does_not_stop_others() -> None:
    bus = EventBus()
    seen: list[str] = []

    def bad(e: Event) -> None:
        raise RuntimeError("boom")

    bus.subscribe([DATA], bad)
    bus.subscribe([DATA], lambda e: seen.append(e.resource))
    bus.publish(Event(DATA, None, "/t", "sample"))
    assert seen == ["/t"] and bus.stats()["listener_errors"] == 1


def test_unknown_kind_refused() -> None:
    with pytest.raises(ValueError, match="unknown event kind"):
        EventBus().subscribe(["nope"], lambda e: None)
