"""Fault stream relay: each healthy peer's `/faults/stream` republished into this gateway's.

Spec "Events / Fault stream" 1-3: relays are open only while a client is attached here; each
uses one SSE client slot on its peer. A relayed event is numbered by this gateway's stream
(Last-Event-ID replay covers it) and carries `x-vendor.peer` naming the peer it came from
(through a site also `peer_path`, down to the gateway that raised the fault); an
`entity_id` of a renamed peer app is given its fleet id.

No silent gap: the relay remembers, per peer name, the id of the last of the
peer's events that reached this gateway's stream, and reopens the peer's stream with
`Last-Event-ID` from it, so the peer replays what it emitted meanwhile. When it cannot (the
peer answers `refetch`, or there is nothing to resume from), a `refetch` event tagged with
the peer goes out on this gateway's stream instead (`ResumePoints.opened`, `refetch_data`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from ..faults.stream import position_header
from .combine import mark_peer
from .health import BACKOFF_S
from .peers import Peer, PeerTable

log = logging.getLogger(__name__)

Publish = Callable[[str, dict[str, Any]], Any]  # (event type, data) -> event id
IDLE_CHECK_S = 0.5
MAX_ID_CHARS = 19  # an event id is a non-negative int64: longer is not one of ours
MAX_FRAME_BYTES = 1 << 20  # a peer's frame larger than this ends its relay (reopened later)
MAX_REASON_CHARS = 64
FORGET_S = 600.0  # a peer gone from the table this long is forgotten (resume point too)
MAX_GONE = 256  # and at most this many gone peers are remembered (the oldest go first)
REFETCH_PATH = "/api/v1/faults"

# Why this gateway's stream says `refetch` for a peer (`reason`; x-vendor.peer names it):
PEER_REFETCH = "peer_events_not_kept"  # the peer answered refetch (its own reason beside)
PEER_JOINED = "peer_joined"  # a relay opened for a peer while clients were already here
PEER_CANNOT_RESUME = "peer_cannot_resume"  # reopened with nothing to resume from


def parse_id(value: str | None) -> int | None:
    """An SSE `id` as gateways of this kind write it (decimal digits); None otherwise."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > MAX_ID_CHARS or not (value.isascii() and value.isdigit()):
        return None
    return int(value)


def parse_events(buffer: bytearray) -> Iterator[tuple[int | None, str, str]]:
    """Complete SSE frames taken off the buffer as (id, event, data); comments are skipped,
    frames without data too; id None when absent or not an id of ours."""
    while True:
        end = buffer.find(b"\n\n")
        if end < 0:
            return
        block = bytes(buffer[:end]).decode("utf-8", "replace")
        del buffer[: end + 2]
        event_id, event, data = None, "message", []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                event_id = parse_id(value)
        if data:
            yield event_id, event, "\n".join(data)


def parse_frames(buffer: bytearray) -> Iterator[tuple[str, str]]:
    """Complete SSE frames taken off the buffer as (event, data); comments are skipped."""
    for _, event, data in parse_events(buffer):
        yield event, data


def tag(data: Any, peer: str, xv: str, rename: Callable[[str, str], str]) -> dict[str, Any]:
    """A peer's event payload marked with the peer's name (and fleet entity ids)."""
    out = dict(data) if isinstance(data, dict) else {"data": data}
    vx = dict(out.get(xv) or {})
    mark_peer(vx, peer)
    # the spec profile names the type as resolved ("app"), the medkit profile its collection
    if vx.get("entity_type") in ("app", "apps") and isinstance(vx.get("entity_id"), str):
        vx["entity_id"] = rename(peer, vx["entity_id"])
    out[xv] = vx
    return out


def refetch_data(reason: str, xv: str, peer_refetch: Any = None) -> dict[str, Any]:
    """This gateway's `refetch` payload for a peer's events it missed (tag() then names the
    peer). From a peer's own refetch only bounded values are taken: its numbers go under
    x-vendor (`peer_last_event_id`, `peer_oldest_kept_id`, `peer_reason`), since the
    top-level ids of a refetch are in the numbering of the stream that carries it."""
    vx: dict[str, Any] = {}
    if isinstance(peer_refetch, dict):
        below = peer_refetch.get(xv)
        if isinstance(below, dict):  # a site's refetch: the robot it was about
            if isinstance(below.get("peer"), str):
                vx["peer"] = below["peer"][:MAX_REASON_CHARS]
            if isinstance(below.get("peer_path"), list):
                vx["peer_path"] = [p[:MAX_REASON_CHARS] for p in below["peer_path"][:16]
                                   if isinstance(p, str)]
        for key in ("last_event_id", "oldest_kept_id"):
            value = peer_refetch.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                vx[f"peer_{key}"] = value
        why = peer_refetch.get("reason")
        if isinstance(why, str):
            vx["peer_reason"] = why[:MAX_REASON_CHARS]
    return {"event_type": "refetch", "reason": reason, "refetch": REFETCH_PATH,
            "message": "Events of this peer did not reach this stream; read the fault list "
                       "again, then follow this stream", xv: vx}


def position_of(headers: Mapping[str, str], xv: str) -> int | None:
    """A peer stream's position (its X-<Vendor>-Last-Event-Id), None when it gives none."""
    return parse_id(headers.get(position_header(xv)))


@dataclass
class _Mark:
    last_id: int | None  # the last of the peer's event ids this stream got (None: unknown)
    gone_since: float | None = None  # when the peer left the table (None: in it)


class ResumePoints:
    """Where each peer's relay resumes, by peer NAME (a dial-in robot's Peer object is new
    each time its tunnel comes back): one id per known peer; pure bookkeeping.

    A peer's first open (no mark yet) sends no Last-Event-ID and remembers the position the
    peer answers with; every later open resumes from the mark. A peer that leaves the table
    keeps its mark FORGET_S (its tunnel may come back), then is forgotten.
    """

    def __init__(self) -> None:
        self.marks: dict[str, _Mark] = {}

    def headers(self, name: str) -> dict[str, str]:
        """The request headers that resume a peer's stream (none on its first open)."""
        mark = self.marks.get(name)
        if mark is None or mark.last_id is None:
            return {}
        return {"Last-Event-ID": str(mark.last_id)}

    def opened(self, name: str, position: int | None, initial: bool) -> str | None:
        """A peer's stream answered (position: its X-<Vendor>-Last-Event-Id). The reason
        for a refetch here, or None: its replay (if any) covers what this stream missed.

        initial: opened as the first local client attached (nothing to resume: the client
        reads the list itself). Otherwise a first open is a peer that joined while clients
        were here (its earlier faults came in no event), and a reopen resumes only from a
        known id and from a peer that says where it stands (a peer without a position may
        not honour Last-Event-ID, nor say `refetch` when it cannot).
        """
        mark = self.marks.get(name)
        if mark is None:
            self.marks[name] = _Mark(position)
            return None if initial else PEER_JOINED
        resumed_from, mark.gone_since = mark.last_id, None
        if resumed_from is None:
            mark.last_id = position
            return PEER_CANNOT_RESUME
        if position is None:
            return PEER_CANNOT_RESUME
        return None  # the peer replays after resumed_from, or says refetch itself

    def seen(self, name: str, event_id: int | None) -> None:
        """One of the peer's events reached this stream."""
        mark = self.marks.get(name)
        if mark is not None and event_id is not None:
            mark.last_id = event_id

    def sweep(self, present: Collection[str], now: float) -> None:
        """Peers in the table keep their marks; gone ones for FORGET_S (MAX_GONE at most)."""
        gone: list[tuple[float, str]] = []
        for name, mark in list(self.marks.items()):
            if name in present:
                mark.gone_since = None
                continue
            if mark.gone_since is None:
                mark.gone_since = now
            if now - mark.gone_since > FORGET_S:
                del self.marks[name]
            else:
                gone.append((mark.gone_since, name))
        for _, name in sorted(gone)[:max(0, len(gone) - MAX_GONE)]:
            del self.marks[name]


class FaultRelay:
    """Opens one relay per online peer while at least one local client is attached.

    Listeners attached with stream=False (the read cache's change signal) keep relays open
    but are not the stream: resume points follow only what reached a stream listener, and
    when the first stream listener attaches to relays already open they reopen, resuming.
    """

    def __init__(self, table: PeerTable, headers: Callable[[Peer], dict[str, str]], xv: str,
                 rename: Callable[[str, str], str]) -> None:
        self.table = table
        self.headers = headers
        self.xv = xv
        self.rename = rename
        self.clients = 0
        self.relayed = 0
        self.refetches = 0  # refetch events published for peers
        self.points = ResumePoints()
        self._listeners: list[Publish] = []
        self._streams = 0  # listeners that are the fault stream (stream=True)
        self._fresh = False  # the supervisor's next pass opens relays for a first client
        self._supervisor: asyncio.Task[None] | None = None
        self._relays: dict[str, tuple[Peer, asyncio.Task[None]]] = {}  # by peer name

    @contextlib.contextmanager
    def attached(self, publish: Publish, *, stream: bool = True) -> Iterator[None]:
        """Keep relays open for the duration of one local client's stream (or other
        listener; stream=False: one that only needs to hear that peers' events came)."""
        self._listeners.append(publish)
        self.clients += 1
        if stream:
            self._streams += 1
            if self._streams == 1:
                self._fresh = True
                self._stop_relays()  # open for the cache alone: reopen them, resuming
        if self._supervisor is None or self._supervisor.done():
            self._supervisor = asyncio.get_running_loop().create_task(self._supervise())
        try:
            yield
        finally:
            self._listeners.remove(publish)
            self.clients -= 1
            if stream:
                self._streams -= 1
            if self.clients == 0:
                self._stop_all()

    def _stop_relays(self) -> None:
        for _, task in self._relays.values():
            task.cancel()
        self._relays.clear()

    def _stop_all(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
            self._supervisor = None
        self._stop_relays()

    async def close(self) -> None:
        """Stop every relay."""
        tasks = [task for _, task in self._relays.values()]
        if self._supervisor is not None:
            tasks.append(self._supervisor)
        self._stop_all()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _supervise(self) -> None:
        """Start a relay for each online peer; stop relays of peers that left or were
        replaced under their name (a dial-in robot's new tunnel: the old relay's connection
        may hang on the old one)."""
        loop = asyncio.get_running_loop()
        while True:
            initial, self._fresh = self._fresh, False
            peers = self.table.peers
            self.points.sweep(peers, time.monotonic())
            for name in [n for n, (p, _) in self._relays.items() if peers.get(n) is not p]:
                self._relays.pop(name)[1].cancel()
            for name, peer in list(peers.items()):
                running = self._relays.get(name)
                if peer.online and (running is None or running[1].done()):
                    task = loop.create_task(self._relay(peer, initial), name=f"relay-{name}")
                    self._relays[name] = (peer, task)
            await asyncio.sleep(IDLE_CHECK_S)

    async def _relay(self, peer: Peer, initial: bool) -> None:
        """Relay one peer's stream until it fails; the supervisor restarts it with backoff.
        `initial` holds for the first attempt only: a later open may have missed events."""
        headers = self.headers(peer)
        failures = 0
        while peer.online and self.table.peers.get(peer.name) is peer:
            try:
                await self._stream(peer, headers, initial)
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the peer went away or refused: retry later
                failures += 1
                log.debug("fault relay from %s: %s", peer.name, exc)
            initial = False
            await asyncio.sleep(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])

    async def _stream(self, peer: Peer, headers: dict[str, str], initial: bool) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=peer.client.budgets.timeout_s,
                                        sock_read=None)
        name = peer.name
        async with peer.client.session.get(peer.client.api("/faults/stream"),
                                           headers={**headers, **self.points.headers(name)},
                                           timeout=timeout) as resp:
            if resp.status != 200:
                raise RuntimeError(f"status {resp.status}")
            if self._streams:
                reason = self.points.opened(name, position_of(resp.headers, self.xv), initial)
                if reason is not None:
                    self._publish(name, "refetch", refetch_data(reason, self.xv))
            buffer = bytearray()
            async for chunk in resp.content.iter_any():
                buffer.extend(chunk)
                for event_id, event, raw in parse_events(buffer):
                    self._received(name, event_id, event, raw)
                if len(buffer) > MAX_FRAME_BYTES:
                    raise RuntimeError(f"a frame over {MAX_FRAME_BYTES} bytes")

    def _received(self, name: str, event_id: int | None, event: str, raw: str) -> None:
        """One of a peer's frames: published here (a refetch as this gateway's own)."""
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
        if data is not None:
            if event == "refetch":
                data = refetch_data(PEER_REFETCH, self.xv, data)
            self._publish(name, event, data)
        if self._streams:
            self.points.seen(name, event_id)

    def _publish(self, name: str, event: str, data: dict[str, Any]) -> None:
        if not self._listeners:
            return
        tagged = tag(data, name, self.xv, self.rename)
        # each stream client attaches the stream's own publish: the stream gets it once
        for publish in dict.fromkeys(self._listeners):
            publish(event, tagged)
        if event == "refetch":
            self.refetches += 1
            log.info("fault relay from %s: refetch (%s)", name, tagged.get("reason"))
        else:
            self.relayed += 1


@dataclass(frozen=True)
class StreamRelay:
    """The fault stream's peer relay (gateway.faults.stream.PeerRelay): the relays stay open
    while a local client follows the stream, unless it asked for this gateway's own events."""

    relay: FaultRelay
    local_only: Callable[[web.Request], bool]  # the caller wants this gateway's answer alone

    def wanted_by(self, request: web.Request, /) -> bool:
        """False for a client that asked for this gateway's own events alone."""
        return not self.local_only(request)

    def attached(self, publish: Publish, /) -> contextlib.AbstractContextManager[None]:
        """Relays open while the context lasts, each event handed to `publish`."""
        return self.relay.attached(publish)
