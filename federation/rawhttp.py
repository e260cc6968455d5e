"""A minimal keep-alive HTTP/1.1 GET client for fan-out reads: a prebuilt request, one parse.

A merged read asks every peer the same small GET; a general client spends far more CPU per
call (URL objects, header multidicts, stream readers) than the answer needs. This one writes
the request bytes and waits for `Content-Length` bytes on a pooled connection. Answers it
does not handle (no Content-Length, chunked) raise `Unsupported`, and the caller uses the
general client. The caller bounds the time; a call cancelled mid-answer closes its connection.
"""

from __future__ import annotations

import asyncio
from typing import Any

# Idle connections kept per peer (fan-out reads in flight at once rarely exceed this).
MAX_IDLE = 32
_HEAD_END = b"\r\n\r\n"


class Unsupported(Exception):
    """An answer this client does not read (the general client reads it)."""


class TooLarge(Exception):
    """The announced body exceeds the caller's cap."""


class _Conn(asyncio.Protocol):
    """One connection; one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.need = -1  # total bytes of the answer once its head is parsed
        self.head_len = 0
        self.status = 0
        self.keep_alive = True
        self.cap = 0
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc or ConnectionResetError("peer closed the connection"))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.need < 0:
            end = self.buf.find(_HEAD_END)
            if end < 0:
                return
            try:
                self._parse_head(bytes(self.buf[:end]))
            except (Unsupported, TooLarge, ValueError) as exc:
                self.keep_alive = False
                waiter.set_exception(exc)
                return
            self.head_len = end + 4
        if len(self.buf) >= self.need:
            body = bytes(self.buf[self.head_len:self.need])
            del self.buf[:self.need]
            self.need = -1
            waiter.set_result((self.status, body))

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
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.need, self.cap = -1, cap
        self.buf.clear()
        self.transport.write(raw)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class RawPool:
    """Keep-alive connections to one http:// peer."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.host_header = f"{host}:{port}"
        self._idle: list[_Conn] = []
        self.calls = 0

    def request_bytes(self, target: str, headers: dict[str, str]) -> bytes:
        """The GET request for target (path and query) with these headers."""
        lines = [f"GET {target} HTTP/1.1", f"Host: {self.host_header}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def get(self, target: str, headers: dict[str, str], cap: int) -> tuple[int, bytes]:
        """(status, body) of GET target; Unsupported, TooLarge or OSError otherwise."""
        raw = self.request_bytes(target, headers)
        conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed:
            _t, conn = await asyncio.get_running_loop().create_connection(
                _Conn, self.host, self.port)
        self.calls += 1
        done = False
        try:
            answer = await conn.request(raw, cap)
            done = True
            return answer
        finally:
            conn.waiter = None
            if done and conn.keep_alive and not conn.closed and len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
            else:
                conn.close()  # cancelled or failed mid-answer: the connection is not reusable

    def close(self) -> None:
        """Close every idle connection."""
        for conn in self._idle:
            conn.close()
        self._idle.clear()


def pool_for(url: str) -> RawPool | None:
    """A RawPool for an http:// base URL with host and port; None for anything else."""
    from urllib.parse import urlsplit

    parts: Any = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
        return None
    return RawPool(parts.hostname, parts.port or 80)
