"""A clock that stops while the calling thread waits for a CPU (Linux schedstat).

Discovery's readiness windows (readiness.py) are short because on a machine with idle cores
local DDS participants answer within milliseconds. On a saturated machine the gateway's
threads, DDS's included, wait in the kernel's run queue instead, and wall-clock windows would
pass before any answer could arrive: readiness then counts only the time the event-loop thread
could have run. /proc/thread-self/schedstat's second field is the time this thread spent
runnable but not running (ns); without it (not Linux, no schedstats) the clock is the wall.
"""

from __future__ import annotations

import time

_SCHEDSTAT = "/proc/thread-self/schedstat"


def waited_s() -> float | None:
    """Seconds the calling thread has spent waiting for a CPU so far, or None if unknown."""
    try:
        with open(_SCHEDSTAT, "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class RunClock:
    """monotonic() minus the run-queue wait of the thread that made it (call it there)."""

    def __init__(self) -> None:
        self._base = waited_s()

    def now(self, wall: float | None = None) -> float:
        """The wall time (default: time.monotonic()) less the CPU wait since construction."""
        wall = time.monotonic() if wall is None else wall
        if self._base is None:
            return wall
        current = waited_s()
        return wall if current is None else wall - (current - self._base)
