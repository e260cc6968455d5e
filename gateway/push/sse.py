"""SSE delivery for subscriptions and triggers: one bounded queue per client, slow ones dropped."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ..errors import SERVICE_UNAVAILABLE, ApiError
from ..faults.stream import SSE_HEADERS, SseSlots, keepalive_ticks
from ..http.jsonutil import dumps

log = logging.getLogger(__name__)

CLOSE = b""
KEEPALIVE = b":keepalive\n\n"
# Kernel send buffer of a push stream: bounds what a stalled client pins (autotuning could
# grow it to megabytes per socket) and lets its queue fill, and the client be dropped, soon.
SEND_BUFFER_BYTES = 128 * 1024


def data_frame(envelope: Any) -> bytes:
    """The `data:` part of one frame (the writer adds the per-connection `id:` line)."""
    return b"data: " + dumps(envelope) + b"\n\n"


def error_frame(error_code: str, message: str, vendor_code: str | None = None,
                **parameters: Any) -> bytes:
    """An `event: error` frame carrying error_code (and vendor_code)."""
    body: dict[str, Any] = {"error_code": error_code, "message": message}
    if vendor_code:
        body["vendor_code"] = vendor_code
    if parameters:
        body["parameters"] = parameters
    return b"event: error\ndata: " + dumps(body) + b"\n\n"


@dataclass(eq=False)
class Client:
    """One connected stream: its queue, and whether it was dropped for falling behind."""

    queue: asyncio.Queue[bytes]
    dropped: bool = False
    closed: bool = False
    last_sent: float = field(default_factory=time.monotonic)
    transport: Any = None  # aborted when the client is dropped (its write may be stuck)


class Channel:
    """The clients of one source (a trigger or a subscription)."""

    def __init__(self, hub: SseHub) -> None:
        self.hub = hub
        self.clients: set[Client] = set()

    def send(self, raw: bytes) -> None:
        """Queue a frame for every client; a client whose queue is full is dropped."""
        for client in tuple(self.clients):
            self.hub.offer(client, raw)

    def close(self) -> None:
        """End every client's stream after what is queued."""
        for client in tuple(self.clients):
            self.hub.end(client)

    @property
    def connected(self) -> int:
        """Number of attached clients."""
        return len(self.clients)


class SseHub:
    """Counts SSE slots (shared with the fault stream), queues and drops, and keeps alive."""

    def __init__(self, slots: SseSlots, queue_size: int, keepalive_s: float) -> None:
        self.slots = slots
        self.queue_size = queue_size
        self.keepalive_s = keepalive_s
        self.clients: set[Client] = set()
        self.dropped_clients = 0
        self.frames_sent = 0
        self._keepalive: asyncio.Task[None] | None = None

    def offer(self, client: Client, raw: bytes) -> None:
        """Queue raw for client; drop the client when its queue is full."""
        if client.dropped or client.closed:
            return
        try:
            client.queue.put_nowait(raw)
        except asyncio.QueueFull:
            client.dropped = True
            self.dropped_clients += 1
            _flush(client.queue)
            client.queue.put_nowait(CLOSE)
            if client.transport is not None:
                client.transport.abort()  # a write stuck on a stalled socket ends at once

    def end(self, client: Client) -> None:
        """Close a client's stream once its queued frames are written."""
        if client.closed or client.dropped:
            return
        client.closed = True
        try:
            client.queue.put_nowait(CLOSE)
        except asyncio.QueueFull:
            _flush(client.queue)
            client.queue.put_nowait(CLOSE)

    def acquire(self) -> None:
        """Take an SSE slot; 503 past sse.max_clients."""
        if not self.slots.acquire():
            raise ApiError(503, SERVICE_UNAVAILABLE,
                           f"Too many SSE clients (sse.max_clients={self.slots.max_clients})",
                           parameters={"max_clients": self.slots.max_clients})

    async def serve(self, request: web.Request, channel: Channel, backlog: list[bytes],
                    on_gone: Callable[[], None] | None = None) -> web.StreamResponse:
        """Stream the channel to one client (a slot must be held; it is released here).

        `on_gone` runs when the client went away (not when the stream was ended here).
        """
        client = Client(asyncio.Queue(self.queue_size + 1), transport=request.transport)
        sock = request.transport.get_extra_info("socket") if request.transport else None
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
            except OSError:
                log.debug("SO_SNDBUF not set on a push stream", exc_info=True)
        for raw in backlog:
            self.offer(client, raw)
        channel.clients.add(client)
        self.clients.add(client)
        self._ensure_keepalive()
        gone = True
        resp = web.StreamResponse(status=200, headers=SSE_HEADERS)
        try:
            await resp.prepare(request)
            await resp.write(b":connected\n\n")
            number = 0
            while True:
                raw = await client.queue.get()
                parts = [raw]
                while not client.queue.empty():
                    parts.append(client.queue.get_nowait())
                out = []
                ending = False
                for part in parts:
                    if part == CLOSE:
                        ending = True
                        break
                    if part[:1] == b":":
                        out.append(part)
                    else:
                        number += 1
                        out.append(b"id: %d\n" % number + part)
                if out:
                    await resp.write(b"".join(out))
                    self.frames_sent += len(out)
                    client.last_sent = time.monotonic()
                if ending:
                    gone = False
                    return resp
        except ConnectionResetError:
            return resp
        finally:
            gone = gone and not client.dropped  # dropped by us: the client did not leave
            channel.clients.discard(client)
            self.clients.discard(client)
            self.slots.release()
            if gone and on_gone is not None:
                try:
                    on_gone()
                except Exception:
                    log.exception("SSE disconnect hook failed")

    def _ensure_keepalive(self) -> None:
        if self._keepalive is None or self._keepalive.done():
            self._keepalive = asyncio.ensure_future(self._keepalive_loop())

    async def _keepalive_loop(self) -> None:
        # One timer for every push client (a timeout per client wait would cost a task each);
        # a keep-alive goes to every client each interval, whatever events it was sent.
        await keepalive_ticks(self.keepalive_s, self._keepalive_tick)

    def _keepalive_tick(self) -> bool:
        for client in tuple(self.clients):
            self.offer(client, KEEPALIVE)
        return bool(self.clients)  # an idle hub stops its timer; the next client starts it

    async def close(self) -> None:
        """End every stream and stop the keep-alive timer."""
        for client in tuple(self.clients):
            self.end(client)
        if self._keepalive is not None:
            self._keepalive.cancel()
            await asyncio.gather(self._keepalive, return_exceptions=True)

    def health(self) -> dict[str, int]:
        """Push stream figures for /health."""
        return {"connected_clients": len(self.clients), "dropped_clients": self.dropped_clients,
                "frames_sent": self.frames_sent, "client_queue_size": self.queue_size}


def _flush(queue: asyncio.Queue[bytes]) -> None:
    while not queue.empty():
        queue.get_nowait()
