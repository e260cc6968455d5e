"""The event-loop thread's scheduler slice: set on the calling thread only, bounded, optional."""

from __future__ import annotations

import threading

import pytest

from gateway.process import loopslice


def _in_thread(fn: object) -> object:
    out: list[object] = []

    def run() -> None:
        out.append(fn())  # type: ignore[operator]

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out[0]


def test_zero_leaves_the_thread_alone() -> None:
    def zero() -> tuple[int | None, int | None, int | None]:
        before = loopslice.get_slice_us()
        return before, loopslice.apply(0), loopslice.get_slice_us()

    before, applied, after = _in_thread(zero)  # type: ignore[misc]
    assert applied is None and after == before


def test_slice_is_set_on_the_calling_thread_only() -> None:
    default = _in_thread(loopslice.get_slice_us)
    if default is None:
        pytest.skip("sched_getattr is not available here")

    def set_then_spawn() -> tuple[int | None, int | None, object]:
        applied = loopslice.apply(300)
        child = _in_thread(loopslice.get_slice_us)  # started after the hint: reset on fork
        return applied, loopslice.get_slice_us(), child

    applied, own, child = _in_thread(set_then_spawn)  # type: ignore[misc]
    if applied is None:
        pytest.skip("this kernel keeps its own slice for SCHED_OTHER threads (before 6.12)")
    assert applied == 300 and own == 300
    assert child == default
    assert loopslice.get_slice_us() == default  # the test's own thread is untouched


def test_slice_is_clamped_to_the_kernel_bounds() -> None:
    applied = _in_thread(lambda: loopslice.apply(5))
    if applied is None:
        pytest.skip("custom slices are not supported here")
    assert applied == loopslice.MIN_US
    assert _in_thread(lambda: loopslice.apply(10**9)) == loopslice.MAX_US
