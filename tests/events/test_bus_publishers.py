"""Each publisher on the bus: faults, data samples, logs, entity sets. Typed payloads, one
event per change, and nothing built or handed to the loop while nobody listens."""

from __future__ import annotations

import struct
import types
from collections.abc import Callable
from typing import Any

import pytest

from gateway.discovery.cache import EntityCache
from gateway.discovery.runtime import HostInfo
from gateway.events import DATA, ENTITIES, FAULTS, LOGS, EntitiesChanged, Event, EventBus, body_of
from gateway.faults.batch import FaultBatch
from gateway.faults.bus_events import FaultChange, batch_events
from gateway.faults.model import CLEARED, CONFIRMED, PREFAILED, FaultRecord
from gateway.ros.graph.snapshot import GraphSnapshot, NodeInfo
from gateway.ros.topics import rosout
from gateway.ros.topics.pool import DataSample, SamplePool, _Entry
from gateway.ros.topics.rosout import ReceivedLog, RosoutLog

FLOAT32 = "std_msgs/msg/Float32"


class _Loop:
    """The event loop as a ROS thread sees it: handed calls wait until run()."""

    def __init__(self) -> None:
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        self.calls.append((fn, args))

    def run(self) -> None:
        calls, self.calls = self.calls, []
        for fn, args in calls:
            fn(*args)


def _bridge(loop: _Loop) -> Any:
    async def run(fn: Any, *args: Any, **kw: Any) -> None:
        return None

    return types.SimpleNamespace(loop=loop, run=run)


def _heard(bus: EventBus, kind: str) -> list[Event[Any]]:
    seen: list[Event[Any]] = []
    bus.subscribe([kind], seen.append)
    return seen


# faults ------------------------------------------------------------------------------------------
def _fault(code: str, status: str) -> FaultRecord:
    return FaultRecord(code=code, severity=2, description="hot", status=status, counter=-1,
                       occurrence_count=1, first_ns=1, last_ns=2, sources=[f"/robot/{code}"])


def test_a_fault_batch_is_one_event_per_stream_event_then_per_silent_change() -> None:
    faults = {"ROOT": _fault("ROOT", CLEARED), "SYM": _fault("SYM", CLEARED),
              "NEW": _fault("NEW", CONFIRMED), "MUTED": _fault("MUTED", CONFIRMED),
              "PEND": _fault("PEND", PREFAILED)}
    batch = FaultBatch()
    for code in ("NEW", "MUTED", "PEND", "ROOT", "SYM"):
        batch.changed[code] = faults[code]
    batch.events = [("fault_confirmed", "NEW", ()), ("fault_cleared", "SYM", ()),
                    ("fault_cleared", "ROOT", ("SYM",))]  # a cascade: the symptom first
    batch.captures = ["NEW", "MUTED"]  # MUTED: confirmed, but muted (no stream event)
    events = list(batch_events(batch, faults, lambda f: ("apps", f.code.lower())))
    assert [(e.kind, e.entity_id, e.resource, e.change) for e in events] == [
        (FAULTS, "new", "NEW", "created"), (FAULTS, "sym", "SYM", "cleared"),
        (FAULTS, "root", "ROOT", "cleared"), (FAULTS, "muted", "MUTED", "changed"),
        (FAULTS, "pend", "PEND", "changed")]
    changes = [e.payload for e in events]
    assert all(isinstance(c, FaultChange) for c in changes)
    assert [(c.fault.code, c.confirmed_now, c.event_type) for c in changes] == [
        ("NEW", True, "fault_confirmed"), ("SYM", False, "fault_cleared"),
        ("ROOT", False, "fault_cleared"), ("MUTED", True, None), ("PEND", False, None)]
    body = body_of(events[0])
    assert body["fault_code"] == "NEW" and body["event_type"] == "fault_confirmed"
    assert body_of(events[3]) is None  # nothing a fault trigger observes


def test_a_fault_without_an_app_is_owned_by_its_sources_last_segment() -> None:
    batch = FaultBatch()
    fault = _fault("F", CONFIRMED)
    batch.changed["F"] = fault
    (event,) = batch_events(batch, {"F": fault}, lambda f: None)
    assert event.entity_id == "F" and event.change == "changed"


# data samples ------------------------------------------------------------------------------------
def _pool_entry(bus: EventBus | None, loop: _Loop) -> tuple[SamplePool, _Entry]:
    pool = SamplePool(_bridge(loop), 8)
    entry = pool._entries["/temp"] = _Entry("/temp", FLOAT32)
    entry.watchers = 1
    pool.publish_samples("/temp", bus)
    return pool, entry


def test_samples_of_a_watched_topic_go_on_the_bus_only_while_someone_listens() -> None:
    loop, bus = _Loop(), EventBus()
    pool, entry = _pool_entry(bus, loop)
    on_sample = pool._callback(entry)
    cdr = b"\x00\x01\x00\x00" + struct.pack("<f", 21.5)
    on_sample(cdr, {"received_timestamp": 5})
    assert loop.calls == []  # nobody listens: nothing handed to the loop
    seen = _heard(bus, DATA)
    on_sample(cdr, {"received_timestamp": 6})
    assert seen == [] and len(loop.calls) == 1  # handed over, published on the loop
    loop.run()
    (event,) = seen
    assert (event.kind, event.entity_id, event.resource, event.change, event.timestamp_ns) == (
        DATA, None, "/temp", "sample", 6)
    assert isinstance(event.payload, DataSample) and event.payload.sample.seq == 2
    assert body_of(event) == {"data": 21.5}
    pool.publish_samples("/temp", None)  # no longer evented: kept fresh only
    on_sample(cdr, {"received_timestamp": 7})
    assert loop.calls == []


def test_an_unconvertible_sample_has_no_body() -> None:
    sample = types.SimpleNamespace(data=b"\x00\x01")  # too short for a Float32
    assert DataSample(FLOAT32, sample).body() is None  # type: ignore[arg-type]


# logs --------------------------------------------------------------------------------------------
def _log_msg(text: str, sec: int) -> Any:
    return types.SimpleNamespace(stamp=types.SimpleNamespace(sec=sec, nanosec=0), level=40,
                                 name="robot.brake", msg=text, file="b.cpp", function="f",
                                 line=3)


def test_logs_go_on_the_bus_in_one_loop_wake_up_per_batch() -> None:
    loop, bus = _Loop(), EventBus()
    log = RosoutLog(_bridge(loop), 10)
    log.publish_records(bus)
    log._on_log(_log_msg("unheard", 1))
    assert loop.calls == []  # nobody listens: nothing handed over
    seen = _heard(bus, LOGS)
    log._on_log(_log_msg("first", 2))
    log._on_log(_log_msg("second", 3))
    assert len(loop.calls) == 1
    loop.run()
    assert [(e.kind, e.entity_id, e.resource, e.change) for e in seen] == [
        (LOGS, None, "2", "created"), (LOGS, None, "3", "created")]
    payloads = [e.payload for e in seen]
    assert all(isinstance(p, ReceivedLog) for p in payloads)
    assert [p.record.message for p in payloads] == ["first", "second"]
    assert len(log.snapshot()[1]) == 3  # the buffer keeps every record either way
    log.publish_records(None)
    log._on_log(_log_msg("after", 4))
    assert loop.calls == []


def test_logs_waiting_for_a_held_loop_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rosout, "PUBLISH_BACKLOG", 2)
    loop, bus = _Loop(), EventBus()
    log = RosoutLog(_bridge(loop), 10)
    log.publish_records(bus)
    seen = _heard(bus, LOGS)
    for n in range(5):
        log._on_log(_log_msg(f"m{n}", n))
    assert len(loop.calls) == 1 and log.publish_dropped == 3
    loop.run()
    assert [e.payload.record.message for e in seen] == ["m3", "m4"]  # the newest kept


# entity sets -------------------------------------------------------------------------------------
def test_every_rebuilt_entity_set_is_announced() -> None:
    bus = EventBus()
    cache = EntityCache(16, HostInfo("h", "Linux", "x86_64"), events=bus)
    graph = GraphSnapshot(nodes=(NodeInfo("brake", "/robot"),))
    cache.apply(graph)
    assert bus.stats()["published"] == 0  # nobody listens
    seen = _heard(bus, ENTITIES)
    cache.apply(graph)
    cache.rebuild()
    cache.merger = lambda local, generation: local
    cache.remerge()
    assert [(e.resource, e.change) for e in seen] == [
        ("graph", "rebuilt"), ("manifest", "rebuilt"), ("peers", "rebuilt")]
    assert [e.payload for e in seen] == [EntitiesChanged(g) for g in (2, 3, 4)]
    assert cache.generation == 4
