"""A minimal keep-alive HTTP/1.1 GET client for fan-out reads: a prebuilt request, one parse.

A merged read asks every peer the same small GET; a general client spends far more CPU per
call (URL objects, header multidicts, stream readers) than the answer needs. This one writes
the request bytes and waits for `Content-Length` bytes on a pooled connection. Answers it
does not handle (no Content-Length, chunked) raise `Unsupported`, and the caller uses the
general client. The caller bounds the time; a call cancelled mid-answer closes its connection.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit

# Idle connections kept per peer (fan-out reads in flight at once rarely exceed this). A call
# takes the one idle the longest: a connection opened for a read that met the peer's only one
# busy (a health probe out) is then used in turn with it and stays open under a robot's
# keep-alive timeout (aiohttp's 75 s), instead of being closed idle and opened again, one
# round trip more, at the next such read.
MAX_IDLE = 32
MAX_REQUESTS = 256  # header blocks of requests kept (all peers share them)
READ_BUFFER = 64 * 1024
_buffers = threading.local()  # the read buffer of this thread's connections


def _read_buffer() -> memoryview:
    """The read buffer shared by the connections of this thread (one loop runs them all):
    each read is copied out of it before the loop reads again, so one buffer serves every
    connection (64 KiB per robot less at a primary over 1,000 robots)."""
    buf: memoryview | None = getattr(_buffers, "buf", None)
    if buf is None:
        buf = _buffers.buf = memoryview(bytearray(READ_BUFFER))
    return buf


_HEAD_END = b"\r\n\r\n"


class Unsupported(Exception):
    """An answer this client does not read (the general client reads it)."""


class TooLarge(Exception):
    """The announced body exceeds the caller's cap."""


Sink = Callable[["_Conn", "tuple[int, bytes] | None", "BaseException | None"], None]


class _Conn(asyncio.BufferedProtocol):
    """One connection; one request at a time, its answer given to a future or a sink.

    Reads land in one buffer kept per thread (no allocation per read, none per connection)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._in = _read_buffer()
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.sink: Sink | None = None
        self.tag = 0  # the sink's name for this call
        self.pending = False  # a request is out and its answer not delivered
        self.need = -1  # total bytes of the answer once its head is parsed
        self.head_len = 0
        self.status = 0
        self.keep_alive = True
        self.cap = 0
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream connection's

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.pending:
            self._deliver(None, exc or ConnectionResetError("peer closed the connection"))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._in

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(self._in[:nbytes]))

    def _deliver(self, result: tuple[int, bytes] | None, exc: BaseException | None) -> None:
        self.pending = False
        if exc is not None:
            self.keep_alive = False
        sink, self.sink = self.sink, None
        if sink is not None:
            sink(self, result, exc)
            return
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if exc is not None:
                waiter.set_exception(exc)
            else:
                assert result is not None  # an answer or an error, never neither
                waiter.set_result(result)

    def data_received(self, data: bytes) -> None:
        if not self.pending:
            self.buf += data
            return
        if not self.buf and self.need < 0 and self._whole(data):
            return  # the usual case: the whole answer in one read, no copy into buf
        self.buf += data
        if self.need < 0:
            end = self.buf.find(_HEAD_END)
            if end < 0:
                return
            try:
                self._parse_head(bytes(self.buf[:end]))
            except (Unsupported, TooLarge, ValueError) as exc:
                self._deliver(None, exc)
                return
            self.head_len = end + 4
        if len(self.buf) >= self.need:
            body = bytes(self.buf[self.head_len:self.need])
            del self.buf[:self.need]
            self.need = -1
            self._deliver((self.status, body), None)

    def _whole(self, data: bytes) -> bool:
        """Answer from data alone when it holds the whole answer (and nothing more)."""
        end = data.find(_HEAD_END)
        if end < 0:
            return False
        try:
            self._parse_head(data[:end])
        except (Unsupported, TooLarge, ValueError) as exc:
            self._deliver(None, exc)
            return True
        if len(data) != self.need:
            self.need = -1
            return False
        self.need = -1
        self._deliver((self.status, data[end + 4:]), None)
        return True

    def _parse_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        status_line = lines[0]
        if not status_line.startswith(b"HTTP/1.1 "):
            raise Unsupported(status_line[:40].decode("latin-1"))
        self.status = int(status_line[9:12])
        length = -1
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                length = int(value)
            elif key == b"transfer-encoding":
                raise Unsupported("chunked answer")
            elif key == b"connection" and value.strip().lower() == b"close":
                self.keep_alive = False
        if length < 0:
            if self.status in (204, 304):
                length = 0
            else:
                raise Unsupported("no Content-Length")
        if length > self.cap:
            raise TooLarge(f"answer of {length} bytes exceeds {self.cap}")
        self.need = len(head) + 4 + length

    def request(self, raw: bytes, cap: int) -> asyncio.Future[tuple[int, bytes]]:
        """Send a request; its answer comes as the returned future's result."""
        self.waiter = asyncio.get_running_loop().create_future()
        self.send(raw, cap, None)
        return self.waiter

    def send(self, raw: bytes, cap: int, sink: Sink | None) -> None:
        """Send a request; its answer goes to sink (or to the waiter when sink is None)."""
        assert self.transport is not None
        self.sink = sink
        self.pending = True
        self.need, self.cap = -1, cap
        self.buf.clear()
        self.transport.write(raw)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


_TAILS: dict[tuple[tuple[tuple[str, str], ...], frozenset[str]], bytes] = {}


def _tail(headers: dict[str, str], fixed_names: frozenset[str]) -> bytes:
    """The header lines of a request after Host, up to the blank line (shared by the pools:
    MAX_REQUESTS kept in all)."""
    key = (tuple(headers.items()), fixed_names)
    tail = _TAILS.get(key)
    if tail is None:
        tail = "".join(f"{k}: {v}\r\n" for k, v in key[0] if k not in fixed_names
                       ).encode("latin-1") + b"\r\n"
        if len(_TAILS) >= MAX_REQUESTS:
            _TAILS.clear()
        _TAILS[key] = tail
    return tail


class RawPool:
    """Keep-alive connections to one http:// peer."""

    def __init__(self, host: str, port: int, fixed: dict[str, str] | None = None) -> None:
        self.host = host
        self.port = port
        self.host_bytes = f"{host}:{port}".encode("latin-1")
        # header lines on every request, after Host
        self.fixed_bytes = "".join(f"{k}: {v}\r\n" for k, v in (fixed or {}).items()
                                   ).encode("latin-1")
        self.fixed_names = frozenset(fixed or ())
        self._idle: list[_Conn] = []  # oldest first
        self.calls = 0

    def request_bytes(self, target: str, headers: dict[str, str]) -> bytes:
        """The GET request for target (path and query) with these headers. What follows the
        Host line is built once for the peers of a fan-out (`_tail`); nothing is kept per
        peer (a live read's unique X-Client-Id made each peer keep MAX_REQUESTS requests,
        objects the garbage collector went through again and again)."""
        return b"GET %b HTTP/1.1\r\nHost: %b\r\n%b%b" % (
            target.encode("latin-1"), self.host_bytes, self.fixed_bytes,
            _tail(headers, self.fixed_names))

    def start(self, target: str, headers: dict[str, str], cap: int
              ) -> tuple[_Conn, asyncio.Future[tuple[int, bytes]]] | None:
        """Send GET target on an idle connection at once: (connection, answer future), or None
        when no idle connection is open. Give the connection back with `finish`."""
        while self._idle:
            conn = self._idle.pop(0)  # idle the longest (see MAX_IDLE)
            if not conn.closed:
                self.calls += 1
                return conn, conn.request(self.request_bytes(target, headers), cap)
        return None

    def send(self, target: str, headers: dict[str, str], cap: int, sink: Sink, tag: int
             ) -> _Conn | None:
        """Send GET target on an idle connection at once, its answer to sink(conn, (status,
        body) or None, exception or None) with conn.tag = tag; None when no idle connection
        is open. Give the connection back with `finish`."""
        while self._idle:
            conn = self._idle.pop(0)  # idle the longest (see MAX_IDLE)
            if not conn.closed:
                self.calls += 1
                conn.tag = tag
                conn.send(self.request_bytes(target, headers), cap, sink)
                return conn
        return None

    def finish(self, conn: _Conn, answered: bool) -> None:
        """Keep a connection for the next call when its answer came whole, else close it."""
        conn.waiter = None
        conn.sink = None
        if answered and conn.keep_alive and not conn.closed and len(self._idle) < MAX_IDLE:
            self._idle.append(conn)
        else:
            conn.close()  # cancelled or failed mid-answer: the connection is not reusable

    async def get(self, target: str, headers: dict[str, str], cap: int) -> tuple[int, bytes]:
        """(status, body) of GET target; Unsupported, TooLarge or OSError otherwise."""
        started = self.start(target, headers, cap)
        if started is not None:  # a kept connection the peer may have closed meanwhile
            try:
                return await self._await(*started)
            except ConnectionError:
                pass  # asked again once on a new connection
        _t, conn = await asyncio.get_running_loop().create_connection(
            _Conn, self.host, self.port)
        self.calls += 1
        return await self._await(conn, conn.request(self.request_bytes(target, headers), cap))

    async def _await(self, conn: _Conn, answer: asyncio.Future[tuple[int, bytes]]
                     ) -> tuple[int, bytes]:
        done = False
        try:
            result = await answer
            done = True
            return result
        finally:
            self.finish(conn, done)

    def close(self) -> None:
        """Close every idle connection."""
        for conn in self._idle:
            conn.close()
        self._idle.clear()


def pool_for(url: str, fixed: dict[str, str] | None = None) -> RawPool | None:
    """A RawPool for an http:// base URL with host and port (`fixed` headers on every
    request); None for anything else."""
    parts: Any = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
        return None
    return RawPool(parts.hostname, parts.port or 80, fixed)
