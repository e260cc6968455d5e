"""Fault stream relay: each healthy peer's `/faults/stream` republished into this gateway's.

Spec "Events / Fault stream" 1-3: relays are open only while a client is attached here; each
uses one SSE client slot on its peer. A relayed event is numbered by this gateway's stream
(Last-Event-ID replay covers it) and carries `x-vendor.peer` naming the peer it came from
(through a site also `peer_path`, down to the gateway that raised the fault); an
`entity_id` of a renamed peer app is given its fleet id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import orjson

from .combine import mark_peer
from .health import BACKOFF_S
from .peers import Peer, PeerTable

log = logging.getLogger(__name__)

Publish = Callable[[str, dict[str, Any]], Any]  # (event type, data) -> event id
IDLE_CHECK_S = 0.5


def parse_frames(buffer: bytearray) -> Iterator[tuple[str, str]]:
    """Complete SSE frames taken off the buffer as (event, data); comments are skipped."""
    while True:
        end = buffer.find(b"\n\n")
        if end < 0:
            return
        block = bytes(buffer[:end]).decode("utf-8", "replace")
        del buffer[: end + 2]
        event, data = "message", []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        if data:
            yield event, "\n".join(data)


def tag(data: Any, peer: str, xv: str, rename: Callable[[str, str], str]) -> dict[str, Any]:
    """A peer's event payload marked with the peer's name (and fleet entity ids)."""
    out = dict(data) if isinstance(data, dict) else {"data": data}
    vx = dict(out.get(xv) or {})
    mark_peer(vx, peer)
    if vx.get("entity_type") == "apps" and isinstance(vx.get("entity_id"), str):
        vx["entity_id"] = rename(peer, vx["entity_id"])
    out[xv] = vx
    return out


class FaultRelay:
    """Opens one relay per online peer while at least one local client is attached."""

    def __init__(self, table: PeerTable, headers: Callable[[Peer], dict[str, str]], xv: str,
                 rename: Callable[[str, str], str]) -> None:
        self.table = table
        self.headers = headers
        self.xv = xv
        self.rename = rename
        self.clients = 0
        self.relayed = 0
        self._listeners: list[Publish] = []
        self._supervisor: asyncio.Task[None] | None = None
        self._relays: dict[str, asyncio.Task[None]] = {}

    @contextlib.contextmanager
    def attached(self, publish: Publish) -> Iterator[None]:
        """Keep relays open for the duration of one local client's stream (or other listener)."""
        self._listeners.append(publish)
        self.clients += 1
        if self._supervisor is None or self._supervisor.done():
            self._supervisor = asyncio.get_running_loop().create_task(self._supervise())
        try:
            yield
        finally:
            self._listeners.remove(publish)
            self.clients -= 1
            if self.clients == 0:
                self._stop_all()

    def _stop_all(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
            self._supervisor = None
        for task in self._relays.values():
            task.cancel()
        self._relays.clear()

    async def close(self) -> None:
        """Stop every relay."""
        tasks = list(self._relays.values())
        if self._supervisor is not None:
            tasks.append(self._supervisor)
        self._stop_all()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _supervise(self) -> None:
        """Start a relay for each online peer; forget relays of peers that left."""
        loop = asyncio.get_running_loop()
        while True:
            for name, peer in list(self.table.peers.items()):
                task = self._relays.get(name)
                if peer.online and (task is None or task.done()):
                    self._relays[name] = loop.create_task(self._relay(peer),
                                                          name=f"relay-{name}")
            for name in [n for n in self._relays if n not in self.table.peers]:
                self._relays.pop(name).cancel()
            await asyncio.sleep(IDLE_CHECK_S)

    async def _relay(self, peer: Peer) -> None:
        """Relay one peer's stream until it fails; the supervisor restarts it with backoff."""
        headers = self.headers(peer)
        failures = 0
        while peer.online and self.table.peers.get(peer.name) is peer:
            try:
                await self._stream(peer, headers)
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the peer went away or refused: retry later
                failures += 1
                log.debug("fault relay from %s: %s", peer.name, exc)
            await asyncio.sleep(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])

    async def _stream(self, peer: Peer, headers: dict[str, str]) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=peer.client.budgets.timeout_s,
                                        sock_read=None)
        async with peer.client.session.get(peer.client.api("/faults/stream"), headers=headers,
                                           timeout=timeout) as resp:
            if resp.status != 200:
                raise RuntimeError(f"status {resp.status}")
            buffer = bytearray()
            async for chunk in resp.content.iter_any():
                buffer.extend(chunk)
                for event, raw in parse_frames(buffer):
                    try:
                        data = orjson.loads(raw)
                    except orjson.JSONDecodeError:
                        continue
                    if self._listeners:
                        tagged = tag(data, peer.name, self.xv, self.rename)
                        for publish in tuple(self._listeners):
                            publish(event, tagged)
                        self.relayed += 1
