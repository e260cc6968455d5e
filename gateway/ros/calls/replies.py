"""Service responses handed from the ROS executor threads to the event loop, in batches.

`client.call_async` builds an rclpy Future per request (a lock, two done callbacks, and under
the events executor a second task per response just to run those callbacks), and the bridge then
crossed threads once per response. Here a request registers a slot in the client's pending table
instead: the executor (either kind) looks the slot up by sequence number and calls
`set_result`, which appends the response to the hub's queue; one `call_soon_threadsafe` wakes
the loop for every response that completed before it ran.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any


class ReplyHub:
    """Results completed on any thread, delivered to asyncio futures on one loop in batches."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._ready: collections.deque[tuple[asyncio.Future[Any], Any]] = collections.deque()
        self._scheduled = False
        self.wakeups = 0
        self.delivered = 0

    def post(self, afut: asyncio.Future[Any], value: Any) -> None:
        """Complete afut with value on the loop (any thread); one wake-up per batch."""
        self._ready.append((afut, value))
        if not self._scheduled:
            self._scheduled = True
            self.wakeups += 1
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop closed: nobody waits any more
                self._scheduled = False

    def _drain(self) -> None:
        self._scheduled = False  # before popping: a post racing this drain schedules another
        ready = self._ready
        while ready:
            afut, value = ready.popleft()
            self.delivered += 1
            if not afut.done():
                afut.set_result(value)


class Reply:
    """Stands in a client's pending table for one request (the slot rclpy's executors fill)."""

    __slots__ = ("afut", "hub", "pending", "seq")

    def __init__(self, hub: ReplyHub, afut: asyncio.Future[Any],
                 pending: dict[int, Any]) -> None:
        self.hub = hub
        self.afut = afut
        self.pending = pending
        self.seq = -1

    def _set_executor(self, executor: Any) -> None:
        """Called by rclpy's executors before set_result; done callbacks are not used here."""

    def _pending(self) -> bool:
        return True

    def done(self) -> bool:
        """False: the slot leaves the pending table once answered."""
        return False

    def set_result(self, response: Any) -> None:
        """The executor thread's answer: leave the pending table, hand the response over."""
        self.pending.pop(self.seq, None)
        self.hub.post(self.afut, response)


def supports_slots(client: Any) -> bool:
    """True when the rclpy client keeps the pending table and lock the slot path relies on."""
    return (isinstance(getattr(client, "_pending_requests", None), dict)
            and hasattr(client, "_lock") and hasattr(client, "handle"))


def send(client: Any, request: Any, hub: ReplyHub) -> Reply:
    """Send one request; the returned slot's `afut` completes with the response on the loop."""
    pending = client._pending_requests
    reply = Reply(hub, hub.loop.create_future(), pending)
    with client._lock:
        with client.handle:
            seq = client.handle.send_request(request)
        if seq in pending:
            raise RuntimeError(f"Sequence ({seq}) conflicts with a pending request")
        reply.seq = seq
        pending[seq] = reply
    return reply


def forget(client: Any, reply: Reply) -> None:
    """Drop an unanswered request from the client's pending table (timeout or cancel)."""
    with client._lock:
        reply.pending.pop(reply.seq, None)
