"""A user-space link emulator: a TCP relay with latency, jitter, a bandwidth cap, stalls and
partitions (this machine has no netem).

Runs in a robot's namespace between the address peers connect to (`--listen`, all addresses
so an address change keeps it reachable) and the gateway's own port (`--target`). Each
direction of the link shares one bandwidth cap over all its connections; every chunk leaves
after its serialization time plus half the RTT (plus jitter, order kept). A partition or a
stall holds every byte (as a link that lost its packets, which TCP retransmits once it is
back) and leaves new connections unanswered. Control: one line per connection on a unix
socket (`set rtt_ms=80 jitter_ms=5 rate_bps=2000000`, `partition on|off`, `stall <s>`).

Usage: python -m tests.fleet.linkemu --listen 0.0.0.0:8080 --target 127.0.0.1:8081 \
           --control /tmp/link.sock [--rtt-ms 80] [--jitter-ms 0] [--rate-bps 0]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import socket
from pathlib import Path

CHUNK = 16384
QUEUE_BYTES = 256 * 1024  # bytes held per direction of one connection before reading stops


class Link:
    """The link's state, shared by every connection through it."""

    def __init__(self, rtt_s: float, jitter_s: float, rate_bps: float) -> None:
        self.rtt_s, self.jitter_s, self.rate_bps = rtt_s, jitter_s, rate_bps
        self.up = asyncio.Event()
        self.up.set()
        self.busy_until = {"up": 0.0, "down": 0.0}  # serialization, per direction
        self.conns: set[asyncio.Task[None]] = set()

    def set(self, **values: float) -> None:
        """Change latency, jitter or the rate (bit/s; 0: uncapped)."""
        self.rtt_s = values.get("rtt_ms", self.rtt_s * 1000) / 1000
        self.jitter_s = values.get("jitter_ms", self.jitter_s * 1000) / 1000
        self.rate_bps = values.get("rate_bps", self.rate_bps)

    def due(self, direction: str, size: int, now: float, last: float) -> float:
        """When a chunk read now arrives on the other side."""
        start = max(now, self.busy_until[direction])
        sent = start + (size * 8 / self.rate_bps if self.rate_bps > 0 else 0.0)
        self.busy_until[direction] = sent
        jitter = random.uniform(-self.jitter_s, self.jitter_s) if self.jitter_s else 0.0
        return max(sent + max(0.0, self.rtt_s / 2 + jitter), last)

    async def stall(self, seconds: float) -> None:
        """Hold every byte for a while."""
        self.up.clear()
        await asyncio.sleep(seconds)
        self.up.set()


async def _pipe(link: Link, direction: str, reader: asyncio.StreamReader,
                writer: asyncio.StreamWriter) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
    held = [0]
    room = asyncio.Event()
    room.set()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await link.up.wait()
            writer.write(data)
            await writer.drain()
            held[0] -= len(data)
            if held[0] < QUEUE_BYTES:
                room.set()
        with contextlib.suppress(OSError):
            writer.write_eof()

    sender = asyncio.create_task(deliver())
    last = 0.0
    try:
        while True:
            await room.wait()
            data = await reader.read(CHUNK)
            await link.up.wait()
            last = link.due(direction, len(data), loop.time(), last) if data else last
            queue.put_nowait((last, data))
            if not data:
                break
            held[0] += len(data)
            if held[0] >= QUEUE_BYTES:
                room.clear()
        await sender
    finally:
        sender.cancel()


async def _serve(link: Link, target: tuple[str, int], reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
    task = asyncio.current_task()
    assert task is not None
    link.conns.add(task)
    out_writer: asyncio.StreamWriter | None = None
    try:
        await link.up.wait()  # a partitioned link answers no new connection
        await asyncio.sleep(link.rtt_s)  # the handshake's round trip
        out_reader, out_writer = await asyncio.open_connection(*target)
        await asyncio.gather(_pipe(link, "up", reader, out_writer),
                             _pipe(link, "down", out_reader, writer))
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        link.conns.discard(task)
        for w in (writer, out_writer):
            if w is not None:
                w.close()


async def _control(link: Link, reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter) -> None:
    line = (await reader.readline()).decode().split()
    answer = "ok"
    if line[:1] == ["set"]:
        link.set(**{k: float(v) for k, v in (kv.split("=", 1) for kv in line[1:])})
    elif line[:1] == ["partition"]:
        if line[1:2] == ["on"]:
            link.up.clear()
        else:
            link.up.set()
    elif line[:1] == ["stall"]:
        asyncio.get_running_loop().create_task(link.stall(float(line[1])))
    else:
        answer = f"unknown command {line!r}"
    writer.write(answer.encode() + b"\n")
    await writer.drain()
    writer.close()


async def main(args: argparse.Namespace) -> None:
    link = Link(args.rtt_ms / 1000, args.jitter_ms / 1000, args.rate_bps)
    host, port = args.listen.rsplit(":", 1)
    thost, tport = args.target.rsplit(":", 1)
    server = await asyncio.start_server(
        lambda r, w: _serve(link, (thost, int(tport)), r, w), host, int(port),
        reuse_address=True)
    Path(args.control).unlink(missing_ok=True)
    control = await asyncio.start_unix_server(lambda r, w: _control(link, r, w), args.control)
    async with server, control:
        await asyncio.gather(server.serve_forever(), control.serve_forever())


def command(control: str | Path, line: str, timeout: float = 5.0) -> str:
    """Send one control line to a running emulator; its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(control))
        sock.sendall(line.encode() + b"\n")
        return sock.makefile().readline().strip()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--control", required=True)
    ap.add_argument("--rtt-ms", type=float, default=0.0)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--rate-bps", type=float, default=0.0)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(ap.parse_args()))
