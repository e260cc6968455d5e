"""TCP streams multiplexed over one WebSocket: how a primary reaches a robot that connected out.

The robot (behind NAT, on a cellular link) opens a WebSocket to its primary and keeps it
open. The primary listens on a loopback port of its own for that robot; each connection
accepted there becomes a stream over the WebSocket, and the robot opens a connection to its
own gateway for it. So the primary's peer client, fan-out, forwarding, relays and beacon
reach the robot at `http://127.0.0.1:<port>` exactly as they reach any peer.

A frame is one binary WebSocket message: stream id (4 bytes, big-endian), kind (1 byte:
OPEN, DATA, CLOSE, CREDIT), payload. Streams are opened by the primary only.

Flow control is per stream: each end may have WINDOW bytes of a stream's data unconfirmed;
the receiving end confirms (CREDIT, a 4-byte count) what it has handed to the local
connection, once a quarter of the window waits (CONFIRM_AT), so a client reading one
download slowly holds back only that stream, never the tunnel's other streams (health probes,
reads, other downloads). An end announces that it counts credits with an empty CREDIT when a
stream opens; an end that never announced it (an earlier version, which ignores CREDIT
frames) is sent to, and read from, as before: one stream's slow reader then holds the whole
tunnel.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import struct
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

log = logging.getLogger(__name__)

OPEN, DATA, CLOSE, CREDIT = 0, 1, 2, 3
_HEAD = struct.Struct("!IB")
_COUNT = struct.Struct("!I")
CHUNK = 32 * 1024
WINDOW = 256 * 1024  # a stream's data sent and not yet confirmed, at most
# The receiving end confirms once this much of a stream's data waits to be confirmed (and the
# local connection took it): a small answer costs no CREDIT frame and no task, and the
# sender, with WINDOW - CONFIRM_AT still to send, never waits for a reader that keeps up.
CONFIRM_AT = WINDOW // 4
MAX_STREAMS = 256
HEAD_WAIT_S = 30.0  # a local connection's first request head must arrive within this
MAX_HEAD_BYTES = 64 * 1024

WebSocket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse


def frame(stream: int, kind: int, payload: bytes = b"") -> bytes:
    """One frame."""
    return _HEAD.pack(stream, kind) + payload


def parse(message: bytes) -> tuple[int, int, bytes]:
    """(stream, kind, payload) of a frame; ValueError when it is too short."""
    if len(message) < _HEAD.size:
        raise ValueError("frame shorter than its header")
    stream, kind = _HEAD.unpack_from(message)
    return stream, kind, message[_HEAD.size:]


def head_has_secret(head: bytes, header: str, secret: str) -> bool:
    """True when the request head carries `header: secret` (constant-time compare)."""
    want = header.lower().encode("latin-1")
    for line in head.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == want:
            return hmac.compare_digest(value.strip(), secret.encode("latin-1"))
    return False


def unauthorized_answer(header: str) -> bytes:
    """The 401 (the spec's error body) a connection without the tunnel's secret gets."""
    body = json.dumps({"error_code": "unauthorized", "message":
                       f"this is a robot tunnel of the primary gateway: {header} missing or "
                       "wrong (use the primary's own API)",
                       "parameters": {"status": 401}}).encode()
    return (b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)


class Mux:
    """One end of a tunnel: streams by id, each pumped to and from a TCP connection."""

    def __init__(self, ws: WebSocket,
                 opener: Callable[[], Awaitable[tuple[asyncio.StreamReader,
                                                      asyncio.StreamWriter]]] | None = None,
                 guard: tuple[str, str] | None = None) -> None:
        self.ws = ws
        self.opener = opener  # the robot's end: connects a stream to its own gateway
        self.guard = guard  # the primary's end: (header, secret) a local connection presents
        self.waiting = 0  # local connections whose first request head is not checked yet
        self.refused = 0
        self.writers: dict[int, asyncio.StreamWriter] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.next_id = 1
        self.send_lock = asyncio.Lock()
        self.peer_credits = False  # the other end confirms what it hands on (CREDIT frames)
        self.window: dict[int, int] = {}  # stream -> bytes it may still send
        self.credited: dict[int, asyncio.Event] = {}  # set when a stream's window grows
        self.unconfirmed: dict[int, int] = {}  # stream -> bytes received, not yet confirmed
        self.draining: set[int] = set()

    async def send(self, stream: int, kind: int, payload: bytes = b"") -> None:
        async with self.send_lock:
            await self.ws.send_bytes(frame(stream, kind, payload))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _pump_out(self, stream: int, reader: asyncio.StreamReader) -> None:
        """TCP -> WebSocket until the connection's end (within the stream's window when the
        other end confirms)."""
        self.window[stream] = WINDOW
        credited = self.credited[stream] = asyncio.Event()
        try:
            while True:
                size = CHUNK
                if self.peer_credits:
                    while self.window.get(stream, 0) <= 0 and stream in self.writers:
                        credited.clear()
                        await credited.wait()
                    if stream not in self.writers:  # closed by the other end meanwhile
                        break
                    size = min(CHUNK, self.window[stream])
                data = await reader.read(size)
                if not data:
                    break
                self.window[stream] = self.window.get(stream, 0) - len(data)
                await self.send(stream, DATA, data)
        except (OSError, ConnectionError):
            pass
        finally:
            self.window.pop(stream, None)
            self.credited.pop(stream, None)
            self.unconfirmed.pop(stream, None)
            writer = self.writers.pop(stream, None)
            if writer is not None:
                writer.close()
            with contextlib.suppress(Exception):
                await self.send(stream, CLOSE)

    def _credit(self, stream: int, payload: bytes) -> None:
        """A CREDIT frame: the other end counts credits; the stream may send more."""
        self.peer_credits = True
        if len(payload) == _COUNT.size and stream in self.window:
            self.window[stream] += _COUNT.unpack(payload)[0]
            event = self.credited.get(stream)
            if event is not None:
                event.set()

    def _received(self, stream: int, writer: asyncio.StreamWriter, payload: bytes) -> None:
        """DATA for a stream of an end that counts credits: handed on at once, confirmed
        in CONFIRM_AT steps once the local connection took it (the other end sends no more
        than its window)."""
        writer.write(payload)
        waiting = self.unconfirmed[stream] = self.unconfirmed.get(stream, 0) + len(payload)
        if waiting >= CONFIRM_AT and stream not in self.draining:
            self.draining.add(stream)
            self._spawn(self._confirm(stream, writer))

    async def _confirm(self, stream: int, writer: asyncio.StreamWriter) -> None:
        try:
            while self.unconfirmed.get(stream, 0) >= CONFIRM_AT:
                with contextlib.suppress(OSError, ConnectionError):
                    await writer.drain()
                count = self.unconfirmed.pop(stream, 0)
                if count and self.writers.get(stream) is writer:
                    await self.send(stream, CREDIT, _COUNT.pack(count))
        except (OSError, ConnectionError, RuntimeError):
            pass
        finally:
            self.draining.discard(stream)

    async def _first_head(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                          ) -> bytes | None:
        """The connection's first request head when it carries the guard's secret; None (the
        connection answered 401 or dropped) otherwise."""
        assert self.guard is not None
        if self.waiting >= MAX_STREAMS:
            writer.close()
            return None
        self.waiting += 1
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_WAIT_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                OSError, ValueError):
            writer.close()
            return None
        finally:
            self.waiting -= 1
        if head_has_secret(head, *self.guard):
            return head
        self.refused += 1
        if self.refused == 1 or self.refused % 100 == 0:
            log.warning("robot tunnel: refused a local connection without %s (%d so far)",
                        self.guard[0], self.refused)
        with contextlib.suppress(OSError, ConnectionError):
            writer.write(unauthorized_answer(self.guard[0]))
            await writer.drain()
        writer.close()
        return None

    async def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The primary's end: a local connection becomes a new stream."""
        if len(self.writers) >= MAX_STREAMS or self.ws.closed:
            writer.close()
            return
        head = b""
        if self.guard is not None:
            checked = await self._first_head(reader, writer)
            if checked is None:
                return
            head = checked
            if len(self.writers) >= MAX_STREAMS or self.ws.closed:
                writer.close()
                return
        stream, self.next_id = self.next_id, self.next_id + 1
        self.writers[stream] = writer
        try:
            await self.send(stream, OPEN)
            await self.send(stream, CREDIT)  # this end confirms what it hands on
            if head:
                await self.send(stream, DATA, head)
        except (ConnectionError, RuntimeError):
            self.writers.pop(stream, None)
            writer.close()
            return
        await self._pump_out(stream, reader)

    async def _open(self, stream: int) -> None:
        """The robot's end: a new stream connects to the gateway (before its data is read)."""
        assert self.opener is not None
        try:
            reader, writer = await self.opener()
        except OSError:
            await self.send(stream, CLOSE)
            return
        self.writers[stream] = writer
        await self.send(stream, CREDIT)  # this end confirms what it hands on
        self._spawn(self._pump_out(stream, reader))

    async def run(self) -> None:
        """Dispatch frames until the WebSocket closes; then close every stream."""
        try:
            async for msg in self.ws:
                if msg.type != aiohttp.WSMsgType.BINARY:
                    continue
                try:
                    stream, kind, payload = parse(msg.data)
                except ValueError:
                    continue
                if kind == OPEN and self.opener is not None and stream not in self.writers:
                    if len(self.writers) < MAX_STREAMS:
                        await self._open(stream)  # a loopback connect: no wait to speak of
                    else:
                        await self.send(stream, CLOSE)
                elif kind == DATA:
                    writer = self.writers.get(stream)
                    if writer is not None and self.peer_credits:
                        self._received(stream, writer, payload)
                    elif writer is not None:  # an end without credits: the tunnel waits
                        writer.write(payload)
                        with contextlib.suppress(OSError, ConnectionError):
                            await writer.drain()
                elif kind == CREDIT:
                    self._credit(stream, payload)
                elif kind == CLOSE:
                    writer = self.writers.pop(stream, None)
                    self.unconfirmed.pop(stream, None)
                    event = self.credited.get(stream)
                    if event is not None:  # a pump waiting for credit ends
                        event.set()
                    if writer is not None:
                        with contextlib.suppress(OSError):
                            writer.write_eof()
                        writer.close()
        finally:
            for writer in list(self.writers.values()):
                writer.close()
            self.writers.clear()
            for task in list(self.tasks):
                task.cancel()
