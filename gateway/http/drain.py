"""Bounded stop: calls in flight get a grace period, then are answered 503; new ones at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

from ..errors import SERVICE_UNAVAILABLE, ApiError


def stopping_error(grace_s: float) -> ApiError:
    """503: the gateway is stopping (the call may have run partly)."""
    return ApiError(503, SERVICE_UNAVAILABLE,
                    f"The gateway is stopping; calls still running after {grace_s:g} s are "
                    "abandoned (setting server.shutdown_grace_sec). Retry when it is back.",
                    parameters={"reason": "stopping"}, headers={"Retry-After": "5"})


class Drain:
    """Tracks the request tasks in flight; stop() waits for them up to a grace period."""

    def __init__(self) -> None:
        self.stopping = False
        self.grace_s = 0.0
        self._calls: set[asyncio.Task[Any]] = set()
        self._streams: set[asyncio.Task[Any]] = set()
        self._abandoned: set[asyncio.Task[Any]] = set()
        self._idle = asyncio.Event()

    async def run(self, call: Awaitable[Any], streaming: bool) -> Any:
        """Await a handler; a call abandoned by stop() is answered 503 instead."""
        if self.stopping and not streaming:
            close = getattr(call, "close", None)  # the handler coroutine never runs
            if close is not None:
                close()
            raise stopping_error(self.grace_s)
        task = asyncio.current_task()
        if task is None:
            return await call
        group = self._streams if streaming else self._calls
        group.add(task)
        try:
            return await call
        except asyncio.CancelledError:
            if task not in self._abandoned:
                raise  # the client went away, or the loop is stopping
            uncancel = getattr(task, "uncancel", None)
            if uncancel is not None:
                uncancel()
            raise stopping_error(self.grace_s) from None
        finally:
            group.discard(task)
            if not self._calls:
                self._idle.set()

    @property
    def in_flight(self) -> int:
        """Calls (not event streams) running now."""
        return len(self._calls)

    def stats(self) -> dict[str, Any]:
        """The /health figures: calls and event streams in flight, and whether stopping."""
        return {"in_flight": len(self._calls), "streams": len(self._streams),
                "stopping": self.stopping}

    async def stop(self, grace_s: float) -> int:
        """Refuse new calls, wait up to grace_s for running ones, abandon the rest (503).

        Event streams end at once. Returns the number of calls abandoned.
        """
        self.stopping, self.grace_s = True, grace_s
        for task in list(self._streams):
            task.cancel()
        deadline = time.monotonic() + grace_s
        while self._calls and time.monotonic() < deadline:
            self._idle.clear()
            try:
                await asyncio.wait_for(self._idle.wait(), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
        abandoned = list(self._calls)
        self._abandoned.update(abandoned)
        for task in abandoned:
            task.cancel()
        return len(abandoned)
