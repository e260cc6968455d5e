"""TCP streams multiplexed over one WebSocket: how a primary reaches a robot that connected out.

The robot (behind NAT, on a cellular link) opens a WebSocket to its primary and keeps it
open. The primary listens on a loopback port of its own for that robot; each connection
accepted there becomes a stream over the WebSocket, and the robot opens a connection to its
own gateway for it. So the primary's peer client, fan-out, forwarding, relays and beacon
reach the robot at `http://127.0.0.1:<port>` exactly as they reach any peer.

A frame is one binary WebSocket message: stream id (4 bytes, big-endian), kind (1 byte:
OPEN, DATA, CLOSE), payload. Streams are opened by the primary only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

log = logging.getLogger(__name__)

OPEN, DATA, CLOSE = 0, 1, 2
_HEAD = struct.Struct("!IB")
CHUNK = 32 * 1024
MAX_STREAMS = 256

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


class Mux:
    """One end of a tunnel: streams by id, each pumped to and from a TCP connection."""

    def __init__(self, ws: WebSocket,
                 opener: Callable[[], Awaitable[tuple[asyncio.StreamReader,
                                                      asyncio.StreamWriter]]] | None = None
                 ) -> None:
        self.ws = ws
        self.opener = opener  # the robot's end: connects a stream to its own gateway
        self.writers: dict[int, asyncio.StreamWriter] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.next_id = 1
        self.send_lock = asyncio.Lock()

    async def send(self, stream: int, kind: int, payload: bytes = b"") -> None:
        async with self.send_lock:
            await self.ws.send_bytes(frame(stream, kind, payload))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _pump_out(self, stream: int, reader: asyncio.StreamReader) -> None:
        """TCP -> WebSocket until the connection's end."""
        try:
            while data := await reader.read(CHUNK):
                await self.send(stream, DATA, data)
        except (OSError, ConnectionError):
            pass
        finally:
            writer = self.writers.pop(stream, None)
            if writer is not None:
                writer.close()
            with contextlib.suppress(Exception):
                await self.send(stream, CLOSE)

    async def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The primary's end: a local connection becomes a new stream."""
        if len(self.writers) >= MAX_STREAMS or self.ws.closed:
            writer.close()
            return
        stream, self.next_id = self.next_id, self.next_id + 1
        self.writers[stream] = writer
        try:
            await self.send(stream, OPEN)
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
                    if writer is not None:
                        writer.write(payload)
                        with contextlib.suppress(OSError, ConnectionError):
                            await writer.drain()
                elif kind == CLOSE:
                    writer = self.writers.pop(stream, None)
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
