"""Event loop lag on a loop with no selector to time (uvloop): a probe timer that backs off.

uvloop waits and runs its callbacks in C, with no hook around its poll, so looplag.py's
stretch timing has nothing to wrap. Here a timer notes how late it runs: anything due at
that instant waited as long. It runs every PROBE_S while the loop is busy (its thread used
more than BUSY_SHARE of a core since the last probe) and backs off, doubling up to IDLE_S,
while it is not: an idle gateway wakes once per IDLE_S for it (about 0.05 ms of CPU a
second). A late probe alone does not make it probe faster: on a machine short of CPU that
would add wakes where they cost most (a stall, a blocking call or a wait for a core, is
recorded by the probe that waited through it). A timer fires on whole milliseconds, so only lateness
beyond TICK_S counts. Lags of short busy stretches between probes are sampled, not all
seen: `max_ms` is the largest lateness a probe saw.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

PROBE_S = 0.02
IDLE_S = 1.0
BUSY_SHARE = 0.05
TICK_S = 0.001  # libuv's timer granularity
WINDOW_S = 5.0


class LoopProbe:
    """Samples the running loop's lag with its own timer (see the module docstring)."""

    def __init__(self) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=int(WINDOW_S / PROBE_S) * 2)
        self.max_ms = 0.0
        self.interval = PROBE_S
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._cpu = 0.0

    def start(self) -> None:
        """Probe the running loop (call in its thread)."""
        self._loop = asyncio.get_running_loop()
        self._cpu = time.thread_time()
        self._arm()

    def _arm(self) -> None:
        assert self._loop is not None
        self._due = time.perf_counter() + self.interval
        self._handle = self._loop.call_later(self.interval, self._run)

    def _run(self) -> None:
        now = time.perf_counter()
        late = max(0.0, now - self._due - TICK_S)
        self.samples.append((now, late))
        self.max_ms = max(self.max_ms, late * 1e3)
        cpu = time.thread_time()
        busy = cpu - self._cpu > BUSY_SHARE * (self.interval + late)  # the thread worked
        self._cpu = cpu
        self.interval = PROBE_S if busy else min(IDLE_S, self.interval * 2)
        self._arm()

    def stop(self) -> None:
        """Stop probing."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def recent(self) -> list[float]:
        """Lateness (s) of the probes of the last WINDOW_S."""
        since = time.perf_counter() - WINDOW_S
        return [late for at, late in self.samples if at >= since]
