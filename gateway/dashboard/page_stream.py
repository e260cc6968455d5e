"""One SSE stream per dashboard page: its watched resources and the fault stream together.

The stream holds one `sse.max_clients` slot however much the page follows. Each watched
resource is a cyclic subscription of this gateway (listed like any other, deleted when the
stream ends); fault events carry their fault stream ids, so `Last-Event-ID` resumes them and
a gap is announced by the fault stream's `refetch` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import Any

from aiohttp import web

from ..errors import INVALID_PARAMETER, SERVICE_UNAVAILABLE, ApiError, not_found
from ..faults.keys import service
from ..faults.stream import SSE_HEADERS
from ..http.routes import Registry
from ..http.settings import SseSettings
from ..http.state import state_of
from ..push.keys import PUSH_DELIVERY
from ..push.rules import SUBSCRIBABLE, subscription_create
from .page_watch import (
    PAGE_INTERVAL,
    RENEW_AFTER_S,
    Watch,
    ended_frame,
    parse_watch,
    tag_frame,
    watching_frame,
)

log = logging.getLogger(__name__)

PAGE_QUEUE = 2048  # frames waiting for a slow page; past it the page reconnects and resumes
CLOSE = b""


class _PageQueue:
    """The page's one outgoing queue; overflow ends the stream (the page resumes by id)."""

    def __init__(self) -> None:
        self.frames: deque[bytes] = deque()
        self.ready = asyncio.Event()
        self.overflowed = False
        self.ended: list[int] = []  # watches whose subscription ended

    def put(self, raw: bytes) -> None:
        if self.overflowed:
            return
        if len(self.frames) >= PAGE_QUEUE:
            self.overflowed = True
            self.frames.clear()
        self.frames.append(raw)
        self.ready.set()


class _TapQueue:
    """Queue-like input the push hub and the fault stream write to; forwards to the page."""

    def __init__(self, page: _PageQueue, index: int | None) -> None:
        self.page = page
        self.index = index  # None: the fault stream (frames pass unchanged)

    def put_nowait(self, raw: bytes) -> None:
        if raw == CLOSE:
            if self.index is None:  # the fault stream ends this client (overflow, shutdown)
                self.page.overflowed = True
                self.page.ready.set()
            else:
                self.page.ended.append(self.index)
                self.page.ready.set()
            return
        if raw[:1] == b":":  # keep-alives: the page stream sends its own
            return
        out = raw if self.index is None else tag_frame(self.index, raw)
        if out is not None:
            self.page.put(out)

    def empty(self) -> bool:
        return True

    def qsize(self) -> int:
        return 0

    def get_nowait(self) -> bytes:
        raise asyncio.QueueEmpty


class _FaultTap:
    """A fault stream client (duck-typed like its own) feeding the page queue."""

    def __init__(self, page: _PageQueue) -> None:
        self.queue = _TapQueue(page, None)
        self.overflowed = False
        self.local_only = False
        self.transport = None

    def write_now(self, framed: bytes) -> bool:
        return False


class _WatchTap:
    """A push channel client (duck-typed like push.sse.Client) for one watch."""

    def __init__(self, page: _PageQueue, index: int) -> None:
        self.queue = _TapQueue(page, index)
        self.dropped = False
        self.closed = False
        self.transport = None
        self.last_sent = time.monotonic()


class _Watches:
    """The page's cyclic subscriptions: created, renewed at expiry, removed at the end."""

    def __init__(self, request: web.Request, page: _PageQueue) -> None:
        self.request = request
        self.state = state_of(request)
        self.delivery = request.app[PUSH_DELIVERY]
        self.engine = self.delivery.engine
        self.page = page
        self.subs: dict[int, Any] = {}

    async def start(self, watch: Watch) -> None:
        """Subscribe one watch (raises ApiError when refused)."""
        if watch.entity_type not in SUBSCRIBABLE:
            raise ApiError(400, INVALID_PARAMETER,
                           f"{watch.entity_type} have no cyclic subscriptions: read "
                           f"{watch.resource} instead", parameters={"parameter": "watch"})
        entity = self.state.cache.entities.get(watch.entity_type, watch.entity_id)
        if entity is None:
            raise not_found(f"{watch.entity_type} '{watch.entity_id}' not found",
                            entity_id=watch.entity_id)
        body = {"resource": watch.resource, "interval": PAGE_INTERVAL,
                "duration": self.engine.max_duration, "protocol": "sse"}
        providers = self.delivery.collections
        spec = subscription_create(body, entity.kind, entity.id, self.engine.max_duration,
                                   {name: True for name in providers})
        sub = self.engine.create_subscription(spec, "dashboard-page-stream", time.time())
        sub.streamed = True
        sub.channel.clients.add(_WatchTap(self.page, watch.index))
        self.subs[watch.index] = sub
        if self.engine.links is not None:  # members on peers: one shared stream per robot
            self.engine.links.share(sub, self.request)

    def close(self) -> None:
        """Remove every subscription of the page."""
        for sub in self.subs.values():
            if self.engine is not None:
                self.engine.remove_subscription(sub)
        self.subs.clear()


async def page_stream(request: web.Request) -> web.StreamResponse:
    """The dashboard page's one SSE stream (its watches and, with faults=1, fault events)."""
    state = state_of(request)
    wanted = parse_watch(request.query, request.query.getall("watch", []))
    svc = service(request)
    stream = svc.stream
    assert stream is not None
    if not stream.slots.acquire():
        raise ApiError(503, SERVICE_UNAVAILABLE,
                       f"Too many SSE clients (sse.max_clients={stream.slots.max_clients})",
                       parameters={"max_clients": stream.slots.max_clients})
    page = _PageQueue()
    watches = _Watches(request, page)
    tap = _FaultTap(page)
    relay: contextlib.AbstractContextManager[bool] = contextlib.nullcontext(True)
    try:
        accepted: dict[int, str] = {}
        refused: dict[int, ApiError] = {}
        for watch in wanted.watches:
            try:
                await watches.start(watch)
                accepted[watch.index] = watch.resource
            except ApiError as exc:
                refused[watch.index] = exc
        backlog: list[bytes] = []
        if wanted.faults:
            last = _last_event_id(request.headers.get("Last-Event-ID"))
            backlog = stream.replay(last)
            stream.clients.add(tap)  # same loop step as the replay copy: no gap, no repeat
            relay = stream.following_peers(request)  # the peers' events while it lasts
        with relay:
            resp = web.StreamResponse(status=200, headers=SSE_HEADERS)
            await resp.prepare(request)
            await resp.write(b"".join([b":connected\n\n", watching_frame(
                accepted, refused, wanted.faults, state.vendor), *backlog]))
            await _pump(resp, page, watches, {w.index: w for w in wanted.watches},
                        state.settings.typed(SseSettings.from_settings).keepalive_sec)
            return resp
    except ConnectionResetError:  # the page went away mid-write
        return web.Response(status=204)
    finally:
        stream.clients.discard(tap)
        watches.close()
        stream.slots.release()


async def _pump(resp: web.StreamResponse, page: _PageQueue, watches: _Watches,
                by_index: dict[int, Watch], keepalive_s: float) -> None:
    """Write the page's frames until it overflows (it then reconnects and resumes)."""
    renew_at: dict[int, float] = {}
    while True:
        timeout = keepalive_s
        if renew_at:
            timeout = max(0.0, min(timeout, min(renew_at.values()) - time.monotonic()))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(page.ready.wait(), timeout)
        page.ready.clear()
        if page.overflowed:
            return
        out = list(page.frames)
        page.frames.clear()
        for index in page.ended:
            watches.subs.pop(index, None)
            renew_at[index] = time.monotonic() + RENEW_AFTER_S
            out.append(ended_frame(index, True))
        page.ended.clear()
        now = time.monotonic()
        for index in [i for i, at in renew_at.items() if at <= now]:
            del renew_at[index]
            try:
                await watches.start(by_index[index])
            except ApiError as exc:
                log.debug("page stream watch %d not renewed: %s", index, exc.message)
                out.append(ended_frame(index, False))
        if not out:
            out.append(b":keepalive\n\n")
        await resp.write(b"".join(out))


def _last_event_id(value: str | None) -> int | None:
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return int(value.strip())
    return None


def register(reg: Registry) -> None:
    """Declare the page stream route."""
    reg.add("GET", "/x-vendor-page-stream", page_stream, tag="server", streaming=True,
            response="Object",  # events: watching, sample, watch-error, watch-end, faults
            summary="One SSE stream for a dashboard page: watched resources and fault events")
