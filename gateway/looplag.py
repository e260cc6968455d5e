"""Event loop lag: how late a periodic timer fires, i.e. how long the loop was busy."""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque

PERIOD_S = 0.02
WINDOW_S = 5.0


class LoopLag:
    """Samples the lag of a PERIOD_S timer; /health reports the last WINDOW_S of samples."""

    def __init__(self, slice_us: int | None = None) -> None:
        self.slice_us = slice_us  # the loop thread's scheduler slice, when one was set
        self._samples: deque[tuple[float, float]] = deque(maxlen=int(WINDOW_S / PERIOD_S))
        self.max_ms = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sampling on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")

    async def stop(self) -> None:
        """Stop sampling."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            due = time.monotonic() + PERIOD_S
            await asyncio.sleep(PERIOD_S)
            now = time.monotonic()
            lag_ms = max(0.0, (now - due) * 1e3)
            self._samples.append((now, lag_ms))
            if lag_ms > self.max_ms:
                self.max_ms = lag_ms

    def health(self) -> dict[str, float | None]:
        """p50, p99 and max lag (ms) over the last WINDOW_S, the max since start, the slice."""
        lags = sorted(lag for _, lag in self._samples)
        if not lags:
            return {"window_s": WINDOW_S, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0,
                    "max_since_start_ms": round(self.max_ms, 2), "slice_us": self.slice_us}

        def pct(q: float) -> float:
            return round(lags[min(len(lags) - 1, max(0, math.ceil(q * len(lags)) - 1))], 2)

        return {"window_s": WINDOW_S, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
                "max_ms": round(lags[-1], 2), "max_since_start_ms": round(self.max_ms, 2),
                "slice_us": self.slice_us}
