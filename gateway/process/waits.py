"""Waiting for an asyncio.Event with a timeout, without ever losing a cancellation.

`asyncio.wait_for(event.wait(), t)` of Python before 3.12 returns normally when the task is
cancelled in the same loop iteration in which the event is set: the cancellation is lost, and a
loop around it runs on after its owner cancelled it. A primary stopping with a peer met exactly
that (stopping a peer's beacon wakes the peer's loop just before the loop is cancelled), and its
stop waited for the hard exit. `wait_event` waits with `asyncio.wait`, which always lets a
cancellation through.
"""

from __future__ import annotations

import asyncio


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
