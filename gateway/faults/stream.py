"""The fault stream: numbered SSE events, a replay ring, one bounded queue per client."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import hdrs, web

from ..errors import SERVICE_UNAVAILABLE, ApiError
from ..http.jsonutil import dumps
from ..http.state import STATE

log = logging.getLogger(__name__)

REPLAY_EVENTS = 100
ID_BLOCK = 1000  # event ids reserved (stored) at a time
AHEAD = ID_BLOCK // 2  # publish() stores a new block while this many ids are still stored
CLIENT_QUEUE = 1024
FANOUT_SLICE = 32  # clients served per loop step when an event goes to many
FANOUT_BUDGET_S = 0.001  # and at most about this much loop time per step
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
               "Connection": "keep-alive", "X-Accel-Buffering": "no"}


class SseSlots:
    """Counts open SSE streams against sse.max_clients; shared by every streaming feature."""

    def __init__(self, max_clients: int) -> None:
        self.max_clients = max_clients
        self.connected = 0

    def acquire(self) -> bool:
        """Take a slot; False at the cap."""
        if self.connected >= self.max_clients:
            return False
        self.connected += 1
        return True

    def release(self) -> None:
        """Give a slot back."""
        self.connected = max(0, self.connected - 1)

    def health(self) -> dict[str, int]:
        """The x-vendor-sse block of /health."""
        return {"connected_clients": self.connected, "max_clients": self.max_clients}


def frame(event_id: int, event: str, data: Any) -> bytes:
    """One SSE frame."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (event_id, event.encode(), dumps(data))


def position_header(xv: str) -> str:
    """`X-<Vendor>-Last-Event-Id` (from the vendor key `x-<vendor>`): a stream response's
    position, the id a client resumes from to miss nothing after what it was sent."""
    return f"X-{xv[2:].capitalize()}-Last-Event-Id"


def refetch_frame(last_event_id: int, oldest: int, newest: int, start: int = 0) -> bytes:
    """The event telling a resuming client that events it missed are gone: refetch.
    `start`: the first id of this process is above it (ids up to it are an earlier one's)."""
    if last_event_id > newest:
        reason = "unknown_event_id"
    elif last_event_id < start:
        reason = "gateway_restarted"
    else:
        reason = "events_not_kept"
    data = {"event_type": "refetch", "reason": reason, "last_event_id": last_event_id,
            "oldest_kept_id": oldest, "refetch": "/api/v1/faults",
            "message": "Events after your Last-Event-ID are no longer kept; read the fault "
                       "list again, then follow this stream"}
    return frame(oldest - 1, "refetch", data)


_CLOSE = b""
_KEEPALIVE = b":keepalive\n\n"


async def keepalive_ticks(interval_s: float, tick: Callable[[], bool | None]) -> None:
    """Call tick every interval_s on a fixed schedule (a late tick does not shift the next)
    until it returns False."""
    due = time.monotonic()
    while True:
        due += interval_s
        now = time.monotonic()
        if due <= now:  # the loop was held past a whole interval: restart from now
            due = now + interval_s
        await asyncio.sleep(due - now)
        if tick() is False:
            return


def chunk(raw: bytes) -> bytes:
    """raw framed as one HTTP/1.1 chunk (Transfer-Encoding: chunked)."""
    return b"%x\r\n%b\r\n" % (len(raw), raw)


class PeerRelay(Protocol):
    """Peers' fault events relayed into a stream while a local client is attached: installed
    by the federation feature on an aggregating gateway (federation/feature.py)."""

    def wanted_by(self, request: web.Request, /) -> bool:
        """False when the client asked for this gateway's own events alone."""
        ...

    def attached(self, publish: Callable[[str, Any], int], /,
                 ) -> contextlib.AbstractContextManager[None]:
        """Relays open while the context lasts, each relayed event handed to `publish`."""
        ...


class ClientQueue(Protocol):
    """What the fan-out does with a client's queue (asyncio.Queue, or a tap's forwarder)."""

    def put_nowait(self, item: bytes, /) -> None: ...
    def get_nowait(self) -> bytes: ...
    def empty(self) -> bool: ...
    def qsize(self) -> int: ...


class StreamClient(Protocol):
    """A fault stream client: an SSE stream of its own (_Client) or a tap feeding another
    stream (dashboard/page_stream.py)."""

    overflowed: bool

    @property
    def queue(self) -> ClientQueue: ...
    @property
    def local_only(self) -> bool: ...
    def write_now(self, framed: bytes) -> bool: ...


@dataclass(eq=False)
class _Client:
    queue: asyncio.Queue[bytes] = field(default_factory=lambda: asyncio.Queue(CLIENT_QUEUE))
    overflowed: bool = False
    local_only: bool = False  # X-<Vendor>-No-Fan-Out: no events relayed from peers
    # Set once the stream is open, chunked and uncompressed: a client with nothing queued
    # and nothing buffered gets its chunk written straight to its socket by the fan-out.
    transport: Any = None

    def write_now(self, framed: bytes) -> bool:
        """Write a framed chunk at once if nothing of this client waits before it."""
        t = self.transport
        if t is None or not self.queue.empty() or t.get_write_buffer_size() or t.is_closing():
            return False
        t.write(framed)
        return True


class _Pending:
    """Frames on their way to a list of clients, a slice per loop step (FaultStream._pump).

    Frames published for the same clients before the first slice went out join it: a storm's
    events reach each client in one chunk per pass instead of one write each.
    """

    __slots__ = ("frames", "events", "targets", "done", "raw", "framed")

    def __init__(self, raw: bytes, events: int, targets: list[StreamClient]) -> None:
        self.frames = [raw]
        self.events = events  # events in frames (backlog counts each client each one owes)
        self.targets = targets
        self.done = 0  # targets served so far
        self.raw: bytes | None = None  # the frames joined, once the first slice goes out
        self.framed = b""  # and as one HTTP chunk

    def seal(self) -> tuple[bytes, bytes]:
        """The frames joined, and as one chunk (the first slice goes out: no more joins)."""
        if self.raw is None:
            self.raw = b"".join(self.frames)
            self.framed = chunk(self.raw)
        return self.raw, self.framed


class FaultStream:
    """Publishes events to every connected client and keeps the last 100 for replay."""

    def __init__(self, slots: SseSlots, keepalive_s: float, first_id: int = 0,
                 persist: Callable[[int], None] | None = None) -> None:
        self.slots = slots
        self.keepalive_s = keepalive_s
        self.last_id = first_id
        # Ids survive restarts: `reserved` is the highest id stored (fault store meta), ids
        # are used only below it, so a new process never hands out an id seen before, and
        # an id below `start_id` was handed out by an earlier process (replay() knows that
        # the events after it are not kept). `start_id` itself is never an event's id: it
        # is this process's position until its first event.
        self.start_id = first_id
        self.reserved = first_id
        self.persist = persist
        if persist is not None:  # a block stored at once: a relayed event need not wait
            persist(self.reserve(ID_BLOCK))
        self.ring: deque[tuple[int, bytes, bool]] = deque(maxlen=REPLAY_EVENTS)
        self.clients: set[StreamClient] = set()
        self.published = 0
        self.dropped_clients = 0
        self._keepalive: asyncio.Task[None] | None = None
        self._outbox: deque[_Pending] = deque()  # frames being delivered, in publish order
        self._pumping = False
        self.relay: PeerRelay | None = None  # peers' events, on an aggregating gateway

    @contextlib.contextmanager
    def following_peers(self, request: web.Request) -> Iterator[bool]:
        """While one local client is served: peers' events relayed in (when a relay is
        installed and the client wants them); yields whether this client takes them."""
        relay = self.relay
        if relay is None:
            yield True  # nothing is relayed: no event to keep from the client either
        elif not relay.wanted_by(request):
            yield False
        else:
            with relay.attached(self.publish_relayed):
                yield True

    def reserve(self, n: int) -> int:
        """Make room for n more ids; the value to store (in the caller's transaction). The
        value stored is always above every id used: see start_id."""
        if self.last_id + n >= self.reserved:
            self.reserved = self.last_id + n + ID_BLOCK
        return self.reserved

    def publish(self, event: str, data: Any, *, relayed: bool = False) -> int:
        """Number, keep and fan out one event (relayed: from a peer); returns its id."""
        if self.last_id + 1 + AHEAD >= self.reserved:
            # relayed events, or a caller that did not reserve: a new block is stored while
            # half of the last one is left, so an id goes out once its block is on disk
            stored = self.reserve(1 + AHEAD)
            if self.persist is not None:
                self.persist(stored)
        self.last_id += 1
        raw = frame(self.last_id, event, data)
        self.ring.append((self.last_id, raw, relayed))
        self.published += 1
        self._fan_out(raw, 1, relayed)
        return self.last_id

    def publish_many(self, events: list[tuple[str, Any]]) -> None:
        """publish() for several events at once: one queue entry per client for all of them."""
        if len(events) == 1:
            self.publish(*events[0])
            return
        frames = []
        for event, data in events:
            self.last_id += 1
            raw = frame(self.last_id, event, data)
            self.ring.append((self.last_id, raw, False))
            frames.append(raw)
        self.published += len(events)
        if frames:
            self._fan_out(b"".join(frames), len(frames))

    def backlog(self) -> int:
        """Deliveries still to make: clients an event has not reached, frames queued."""
        return (sum((len(p.targets) - p.done) * p.events for p in self._outbox)
                + sum(c.queue.qsize() for c in self.clients))

    def publish_relayed(self, event: str, data: Any) -> int:
        """publish() for an event relayed from a peer gateway."""
        return self.publish(event, data, relayed=True)

    def _fan_out(self, raw: bytes, events: int = 0, relayed: bool = False) -> None:
        targets = [c for c in self.clients if not (relayed and c.local_only)]
        outbox = self._outbox
        if not outbox:
            if len(targets) <= FANOUT_SLICE:
                self._deliver(raw, chunk(raw), targets, 0)
                return
        else:
            last = outbox[-1]
            if last.raw is None and last.targets == targets:  # not started, same clients
                last.frames.append(raw)
                last.events += events
                return
        # Every woken client writes to its socket in the same loop step; with many clients
        # that step would hold the loop for a long time (a loopback send costs tens to
        # hundreds of microseconds on a busy machine). Deliver FANOUT_SLICE clients per
        # step instead, frames in publish order, so other requests get their turn between.
        outbox.append(_Pending(raw, events, targets))
        if not self._pumping:
            self._pumping = True
            asyncio.get_running_loop().call_soon(self._pump)

    def _pump(self) -> None:
        pending = self._outbox[0]
        raw, framed = pending.seal()
        pending.done = self._deliver(raw, framed, pending.targets, pending.done,
                                     time.perf_counter() + FANOUT_BUDGET_S)
        if pending.done >= len(pending.targets):
            self._outbox.popleft()
        if self._outbox:
            asyncio.get_running_loop().call_soon(self._pump)
        else:
            self._pumping = False

    def _deliver(self, raw: bytes, framed: bytes, targets: list[StreamClient], start: int,
                 until: float = math.inf) -> int:
        """Hand raw (framed: as a chunk) to up to FANOUT_SLICE targets from `start`, fewer
        once past `until`; returns the index reached.

        A caught-up client gets the chunk written to its socket here, shared by every such
        client (no task wake-up, no per-client encoding); the others get its frames queued,
        in order behind what they already have.
        """
        end = min(len(targets), start + FANOUT_SLICE)
        i = start
        while i < end:
            if i > start and (i - start) % 8 == 0 and time.perf_counter() > until:
                break
            client = targets[i]
            i += 1
            if client.write_now(framed):
                continue
            try:
                client.queue.put_nowait(raw)
            except asyncio.QueueFull:
                # A client this far behind is closed; it may reconnect with Last-Event-ID.
                if not client.overflowed:
                    client.overflowed = True
                    self.dropped_clients += 1
                    while not client.queue.empty():
                        client.queue.get_nowait()
                    client.queue.put_nowait(_CLOSE)
        return i

    async def _keepalive_loop(self) -> None:
        # One timer for all clients (a per-client wait_for would cost a task per event). A
        # keep-alive goes out every interval whatever else flows: traffic never postpones it
        # (a reporter re-reporting unchanged faults makes batches but no events).
        await keepalive_ticks(self.keepalive_s, lambda: self._fan_out(_KEEPALIVE))

    def replay(self, last_event_id: int | None, local_only: bool = False) -> list[bytes]:
        """Kept frames newer than last_event_id (none without a Last-Event-ID).

        When events after last_event_id are no longer kept (the ring moved on, the id was
        handed out before this process started, or it is unknown), a `refetch` event comes
        first: never a silent gap.
        """
        if last_event_id is None:
            return []
        oldest = self.ring[0][0] if self.ring else self.last_id + 1
        frames = [raw for i, raw, relayed in self.ring
                  if i > last_event_id and not (relayed and local_only)]
        if (last_event_id < oldest - 1 or last_event_id > self.last_id
                or last_event_id < self.start_id):
            frames.insert(0, refetch_frame(last_event_id, oldest, self.last_id, self.start_id))
        return frames

    async def serve(self, request: web.Request) -> web.StreamResponse:
        """The SSE response for one client until it disconnects (503 past the cap), with the
        peers' events while it lasts unless it asked for this gateway's own alone."""
        with self.following_peers(request) as relayed:
            return await self._serve(request, local_only=not relayed)

    async def _serve(self, request: web.Request, local_only: bool) -> web.StreamResponse:
        if not self.slots.acquire():
            raise ApiError(503, SERVICE_UNAVAILABLE,
                           f"Too many SSE clients (sse.max_clients={self.slots.max_clients})",
                           parameters={"max_clients": self.slots.max_clients})
        if self._keepalive is None or self._keepalive.done():
            self._keepalive = asyncio.ensure_future(self._keepalive_loop())
        client = _Client(local_only=local_only)
        try:
            last = _last_event_id(request.headers.get("Last-Event-ID"))
            backlog = self.replay(last, local_only)
            self.clients.add(client)  # same loop step as the replay copy: no gap, no repeat
            resp = web.StreamResponse(status=200, headers=SSE_HEADERS)
            state = request.app.get(STATE)
            if state is not None:  # where this client stands (a relay resumes from it)
                resp.headers[position_header(state.xv)] = str(self.last_id)
            await resp.prepare(request)
            await resp.write(b"".join([b":connected\n\n", *backlog]))  # sends the headers
            if resp.headers.get(hdrs.TRANSFER_ENCODING) == "chunked" and not resp.compression:
                client.transport = request.transport  # the fan-out may write to it directly
            while True:
                raw = await client.queue.get()
                parts = [raw]
                while not client.queue.empty():  # whatever else is queued: one chunk
                    parts.append(client.queue.get_nowait())
                if _CLOSE in parts:
                    return resp
                await resp.write(b"".join(parts) if len(parts) > 1 else raw)
        except ConnectionResetError:
            return resp
        finally:
            self.clients.discard(client)
            self.slots.release()

    def end_all(self) -> None:
        """End every client's stream (server shutdown: handlers must not linger)."""
        for client in self.clients:
            while not client.queue.empty():
                client.queue.get_nowait()
            client.queue.put_nowait(_CLOSE)

    async def close(self) -> None:
        """Stop the keep-alive timer (clients end with the server)."""
        if self._keepalive is not None:
            self._keepalive.cancel()
            await asyncio.gather(self._keepalive, return_exceptions=True)


def _last_event_id(value: str | None) -> int | None:
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return int(value.strip())
    return None
