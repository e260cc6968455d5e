"""Waiting with a timeout (for an asyncio.Event, or any awaitable) without ever losing a
cancellation.

`asyncio.wait_for(event.wait(), t)` of Python before 3.12 returns normally when the task is
cancelled in the same loop iteration in which the event is set: the cancellation is lost, and a
loop around it runs on after its owner cancelled it. A primary stopping with a peer met exactly
that (stopping a peer's beacon wakes the peer's loop just before the loop is cancelled), and its
stop waited for the hard exit. `wait_event` waits with `asyncio.wait`, which always lets a
cancellation through; `within` is wait_for for any awaitable built the same way (a graph query
finishing as the discovery poller is cancelled lost the cancellation just so, and the stop hung).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """True once `event` is set, False after `timeout` seconds (None: no limit); a
    cancellation of the caller always raises CancelledError here."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()
    return bool(done)


async def within(awaitable: Awaitable[T], timeout: float | None) -> T:
    """`asyncio.wait_for(awaitable, timeout)` that never loses its caller's cancellation: the
    result, or asyncio.TimeoutError after `timeout` seconds (the awaitable then cancelled and
    waited for, as wait_for does)."""
    fut = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({fut}, timeout=timeout)
    except asyncio.CancelledError:
        fut.cancel()
        raise
    if not done:
        fut.cancel()
        await asyncio.wait({fut})
        raise asyncio.TimeoutError
    return fut.result()
