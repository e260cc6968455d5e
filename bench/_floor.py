"""The floor of a Python server: a raw uvloop Protocol writing one prebuilt response per request.

It reads until the blank line that ends each request head and writes FILE's bytes (a whole
HTTP/1.1 response, captured from the gateway), nothing else: no parse, no routing, keep-alive.

    python bench/_floor.py PORT FILE
"""

from __future__ import annotations

import asyncio
import sys
from typing import cast

import uvloop


def floor_protocol(response: bytes) -> type[asyncio.Protocol]:
    """The floor's protocol class: `response` written once per request head, nothing else."""

    class Floor(asyncio.Protocol):
        def __init__(self) -> None:
            self.buf = b""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = cast(asyncio.Transport, transport)  # uvloop's: not a subclass

        def data_received(self, data: bytes) -> None:
            buf = self.buf + data if self.buf else data
            end = buf.find(b"\r\n\r\n")
            while end >= 0:
                self.transport.write(response)
                buf = buf[end + 4:]
                end = buf.find(b"\r\n\r\n")
            self.buf = buf

    return Floor


def main() -> None:
    """Serve FILE's response to every request on PORT until killed."""
    port, path = int(sys.argv[1]), sys.argv[2]
    with open(path, "rb") as f:
        floor = floor_protocol(f.read())

    async def serve() -> None:
        await asyncio.get_running_loop().create_server(floor, "127.0.0.1", port)
        await asyncio.Event().wait()

    uvloop.run(serve())


if __name__ == "__main__":
    main()
