"""Event loop lag: how long the loop stays busy at a stretch, measured around its selector
(or, on a loop without one, sampled by a probe timer: loopprobe.py)."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from .loopprobe import LoopProbe

log = logging.getLogger(__name__)

WINDOW_S = 5.0
MIN_STRETCH_S = 0.0005  # shorter stretches are not kept: they cannot move a figure past 0.5 ms
MAX_KEPT = 20000  # stretches kept at most (under a flood of long ones the window shortens)


def lag_quantile(stretches: Iterable[float], window_s: float, q: float) -> float:
    """The lag (s) a timer due at a random instant of the window exceeds with chance 1 - q."""
    # An instant x seconds into a busy stretch of length L waits L - x for the loop, so the
    # time with a lag above y totals f(y) = sum(L - y for L > y): solve f(y) = (1 - q) window.
    budget = (1.0 - q) * window_s
    longest = sorted(stretches, reverse=True)
    total = 0.0
    for k, length in enumerate(longest, 1):
        total += length
        below = longest[k] if k < len(longest) else 0.0
        if total - k * below > budget:
            return (total - budget) / k
    return 0.0


class LoopLag:
    """Times each busy stretch of the loop (from its wakeup, or from a timer's due time when
    the wakeup came late, to its next wait); no timer of its own, so an idle loop stays idle.
    /health reports the lag a timer would see over the last WINDOW_S."""

    def __init__(self, slice_us: int | None = None) -> None:
        self.slice_us = slice_us  # the loop thread's scheduler slice, when one was set
        self._stretches: deque[tuple[float, float]] = deque(maxlen=MAX_KEPT)  # (end, length)
        self.max_ms = 0.0
        self._selector: Any = None
        self._started = 0.0
        self._since = 0.0  # when the current busy stretch began
        self._probe: LoopProbe | None = None  # a loop with no selector to time
        self.loop_kind: str | None = None  # asyncio or uvloop, once started

    def start(self) -> None:
        """Measure the running loop: a selector loop around its selector; any other (uvloop)
        with a probe timer (loopprobe.py)."""
        loop = asyncio.get_running_loop()
        self.loop_kind = "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
        selector = getattr(loop, "_selector", None)
        if selector is None or not callable(getattr(selector, "select", None)):
            self._probe = LoopProbe()
            self._probe.start()
            return
        self.attach(selector)

    def attach(self, selector: Any) -> None:
        """Wrap selector.select so that the time between two waits is measured."""
        if selector is None or not callable(getattr(selector, "select", None)):
            log.info("event loop lag not measured: the loop has no selector to time")
            return
        inner = selector.select
        clock = time.perf_counter
        self._started = self._since = clock()

        def select(timeout: float | None = None) -> Any:
            start = clock()
            busy = start - self._since
            if busy >= MIN_STRETCH_S:
                self._record(start, busy)
            try:
                return inner(timeout)
            finally:
                now = clock()
                # epoll waits whole milliseconds, rounded up: later than that, the thread
                # waited for a core, and the timer it woke for was owed since its due time.
                due = start + math.ceil(timeout * 1e3) * 1e-3 if timeout else now
                self._since = due if now > due else now

        selector.select = select
        self._selector = selector

    def _record(self, end: float, length: float) -> None:
        self._stretches.append((end, length))
        if length * 1e3 > self.max_ms:
            self.max_ms = length * 1e3

    async def stop(self) -> None:
        """Stop measuring."""
        if self._probe is not None:
            self._probe.stop()
        if self._selector is not None:
            del self._selector.select  # the class's own method again
            self._selector = None

    def health(self) -> dict[str, float | str | None]:
        """p50, p99 and max lag (ms) over the last WINDOW_S, the max since start, the slice,
        and how it is measured."""
        how: str | None
        if self._probe is not None:  # sampled lateness of the probe timer
            late = sorted(self._probe.recent())
            p50, p99 = _quantile(late, 0.5), _quantile(late, 0.99)
            longest, since_start, how = max(late, default=0.0), self._probe.max_ms, "probe"
        else:  # busy stretches timed around the selector
            now = time.perf_counter()
            kept = self._stretches
            while kept and kept[0][0] < now - WINDOW_S:
                kept.popleft()
            recent = [length for _, length in kept]
            window = min(WINDOW_S, max(now - self._started, 1e-3))
            p50, p99 = lag_quantile(recent, window, 0.5), lag_quantile(recent, window, 0.99)
            longest, since_start = max(recent, default=0.0), self.max_ms
            how = "selector" if self._selector is not None else None
        return {"window_s": WINDOW_S, "p50_ms": round(p50 * 1e3, 2),
                "p99_ms": round(p99 * 1e3, 2), "max_ms": round(longest * 1e3, 2),
                "max_since_start_ms": round(since_start, 2), "slice_us": self.slice_us,
                "loop": self.loop_kind, "measured_by": how}


def _quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted samples (0 when there are none)."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
