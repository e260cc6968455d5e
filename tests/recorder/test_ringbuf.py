"""The ring buffer, run against both twins (compiled ringbuf_c and pure ringbuf_py)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

from recorder import buffer, ringbuf_py

try:
    ringbuf_c: ModuleType | None = importlib.import_module("recorder.ringbuf_c")
except ImportError:
    ringbuf_c = None

TWINS = [
    pytest.param(ringbuf_py, id="pure"),
    pytest.param(ringbuf_c, id="compiled", marks=pytest.mark.skipif(
        ringbuf_c is None, reason="recorder.ringbuf_c is not built")),
]
S = 1_000_000_000


@pytest.fixture(params=TWINS)
def rb(request: pytest.FixtureRequest) -> ModuleType:
    return request.param  # type: ignore[no-any-return]


def test_compiled_twin_is_loaded_when_required() -> None:
    if os.environ.get("DIAG_GATEWAY_REQUIRE_EXT", "").strip() not in ("1", "true", "yes"):
        pytest.skip("DIAG_GATEWAY_REQUIRE_EXT is not set")
    assert ringbuf_c is not None and ringbuf_c.COMPILED
    assert buffer.RINGBUF_IMPL == "compiled"


def test_twins_say_what_they_are() -> None:
    assert ringbuf_py.COMPILED is False
    if ringbuf_c is not None:
        assert ringbuf_c.COMPILED is True


def test_push_keeps_order_and_numbers(rb: ModuleType) -> None:
    buf = rb.RingBuffer(10 * S, 1 << 20)
    seqs = [buf.push(i % 3, 100 + i, 50 + i, bytes([i])) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert len(buf) == buf.count == 5 and buf.nbytes == 5
    assert buf.snapshot() == [(i + 1, i % 3, 100 + i, 50 + i, bytes([i])) for i in range(5)]
    assert buf.first_seq == 1 and buf.last_seq == 5


def test_keeps_references_not_copies(rb: ModuleType) -> None:
    buf = rb.RingBuffer(S, 1 << 20)
    data = b"x" * 1000
    buf.push(0, 1, 1, data)
    assert buf.snapshot()[0][4] is data


def test_evicts_by_age_relative_to_newest(rb: ModuleType) -> None:
    buf = rb.RingBuffer(2 * S, 1 << 20)
    for t in range(6):  # one message per second
        buf.push(0, t * S, 0, b"m")
    assert [e[2] for e in buf.snapshot()] == [3 * S, 4 * S, 5 * S]
    assert buf.evicted == 3


def test_evicts_by_bytes_but_keeps_the_newest(rb: ModuleType) -> None:
    buf = rb.RingBuffer(100 * S, 250)
    for i in range(5):
        buf.push(0, i, 0, bytes(100))
    assert buf.nbytes == 200 and [e[0] for e in buf.snapshot()] == [4, 5]


def test_refuses_a_message_larger_than_the_cap(rb: ModuleType) -> None:
    buf = rb.RingBuffer(S, 10)
    assert buf.push(0, 1, 0, bytes(11)) == 0
    assert buf.dropped == 1 and len(buf) == 0
    assert buf.push(0, 2, 0, bytes(10)) == 1


def test_grows_past_initial_capacity_and_wraps(rb: ModuleType) -> None:
    buf = rb.RingBuffer(1000 * S, 1 << 30, capacity=16)
    for i in range(40):
        buf.push(i, i, i, bytes([i % 256]))
    assert buf.capacity >= 40
    assert [e[1] for e in buf.snapshot()] == list(range(40))
    # wrap around: evict half by age, push more, order stays
    small = rb.RingBuffer(5, 1 << 30, capacity=16)
    for i in range(100):
        small.push(0, i, 0, bytes([i]))
    assert [e[2] for e in small.snapshot()] == list(range(94, 100))  # [newest - 5, newest]
    assert small.capacity == 16


def test_max_entries_caps_the_count(rb: ModuleType) -> None:
    buf = rb.RingBuffer(1000 * S, 1 << 30, max_entries=20, capacity=16)
    for i in range(50):
        buf.push(0, i, 0, b"a")
    assert len(buf) == 20 and buf.capacity == 20
    assert buf.snapshot()[0][0] == 31


def test_snapshot_filters_by_sequence_and_time(rb: ModuleType) -> None:
    buf = rb.RingBuffer(1000 * S, 1 << 20)
    for i in range(10):
        buf.push(0, i * 10, 0, b"z")
    assert [e[0] for e in buf.snapshot(after_seq=7)] == [8, 9, 10]
    assert [e[2] for e in buf.snapshot(since_ns=35)] == [40, 50, 60, 70, 80, 90]
    assert [e[2] for e in buf.snapshot(since_ns=20, until_ns=40)] == [20, 30, 40]
    assert buf.snapshot(after_seq=10) == []


def test_trim_ages_out_while_idle(rb: ModuleType) -> None:
    buf = rb.RingBuffer(2 * S, 1 << 20)
    buf.push(0, 1 * S, 0, b"a")
    buf.push(0, 2 * S, 0, b"b")
    assert buf.trim(3 * S + 1) == 1
    assert buf.trim(10 * S) == 1 and len(buf) == 0 and buf.nbytes == 0
    assert buf.first_seq == 3  # empty: the next push's number


def test_clear_keeps_counting(rb: ModuleType) -> None:
    buf = rb.RingBuffer(S, 1 << 20)
    buf.push(0, 1, 0, b"a")
    buf.clear()
    assert len(buf) == 0 and buf.push(0, 2, 0, b"b") == 2


def test_out_of_order_receive_times(rb: ModuleType) -> None:
    buf = rb.RingBuffer(10, 1 << 20)
    buf.push(0, 100, 0, b"a")
    buf.push(1, 95, 0, b"b")  # another topic's callback ran a little later
    buf.push(0, 111, 0, b"c")  # horizon 101: both older ones go
    assert [e[2] for e in buf.snapshot()] == [111]


def test_rejects_bad_arguments(rb: ModuleType) -> None:
    with pytest.raises(ValueError):
        rb.RingBuffer(-1, 10)
    with pytest.raises(ValueError):
        rb.RingBuffer(1, 10, max_entries=0)
