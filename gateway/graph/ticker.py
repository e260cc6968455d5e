"""A plugin's periodic tick: one loop task, a failed tick logged and the loop kept going."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable


class Ticker:
    """Awaits `tick()` every `interval()` seconds on a task named `name` until stopped."""

    def __init__(self, name: str, tick: Callable[[], Awaitable[None]],
                 interval: Callable[[], float], log: logging.Logger) -> None:
        self.name = name
        self._tick = tick
        self._interval = interval
        self._log = log
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin ticking."""
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        """Cancel the loop and wait for it."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            try:
                await self._tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                self._log.exception("%s failed", self.name.replace("-", " "))
            await asyncio.sleep(self._interval())
