"""A user-space link emulator: a TCP relay with latency, jitter, a bandwidth cap, stalls and
partitions (this machine has no netem).

Runs in a robot's namespace between the address peers connect to (`--listen`, all addresses
so an address change keeps it reachable) and the gateway's own port (`--target`). Each
direction of the link shares one bandwidth cap over all its connections; every chunk leaves
after its serialization time plus half the RTT (plus jitter, order kept). A partition or a
stall holds every byte (as a link that lost its packets, which TCP retransmits once it is
back: held bytes leave half an RTT after the link is back) and leaves new connections
unanswered. Control: one line per connection on a unix socket (`set rtt_ms=80 jitter_ms=5
rate_bps=2000000`, `partition on|off`, `stall <s>`; `stats` answers the bytes carried so far,
`up=N down=M`, up being from the connecting side to `--target`).

The relay is built on asyncio protocols and timers (no stream reader, queue or task per
direction), on uvloop when it imports: a 100-robot lab runs 100 of these on two cores beside
everything else, and each chunk costs one read, one timer and one write.

Usage: python -m tests.fleet.linkemu --listen 0.0.0.0:8080 --target 127.0.0.1:8081 \
           --control /tmp/link.sock [--rtt-ms 80] [--jitter-ms 0] [--rate-bps 0]
       python -m tests.fleet.linkemu --hub /tmp/hub.sock   (many links; see `hub`)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import ctypes
import os
import random
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

_now = time.monotonic  # due times: exact whatever the loop's clock (uvloop's counts in ms)
CHUNK = 16384  # a large read leaves in pieces of this size, each when its time comes
# The first piece of a read is at most one TCP segment: a real link delivers the first
# segment of a write (a response's status line and headers) after its own serialization time,
# not after that of the 16 KiB around it (at 2 Mbit/s: 6 ms against 66 ms).
SEGMENT = 1460
QUEUE_BYTES = 256 * 1024  # bytes held per direction of one connection before reading stops
_EOF = b""  # in a pipe's queue: write EOF; None: close the sink


class Link:
    """The link's state, shared by every connection through it."""

    def __init__(self, rtt_s: float, jitter_s: float, rate_bps: float,
                 target: tuple[str, int] = ("127.0.0.1", 0), netns: int | None = None) -> None:
        self.rtt_s, self.jitter_s, self.rate_bps = rtt_s, jitter_s, rate_bps
        self.target = target  # the gateway's own address, where the link's inner side goes
        self.netns = netns  # fd of the network namespace of the link's sockets (None: ours)
        self.source: str | None = None  # the address the inner connection leaves from
        self.is_up = True
        self.busy_until = {"up": 0.0, "down": 0.0}  # serialization, per direction
        self.carried = {"up": 0, "down": 0}  # bytes delivered to the other side, per direction
        self.pipes: set[_Pipe] = set()
        self._when_up: list[Callable[[], None]] = []

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

    def when_up(self, callback: Callable[[], None]) -> None:
        """Call now if the link is up, else once it is back."""
        if self.is_up:
            callback()
        else:
            self._when_up.append(callback)

    def down(self) -> None:
        """Hold every byte and answer no new connection."""
        if not self.is_up:
            return
        self.is_up = False
        for pipe in self.pipes:
            pipe.hold()

    def up(self) -> None:
        """Release held bytes half an RTT from now (the retransmission)."""
        if self.is_up:
            return
        self.is_up = True
        now = _now()
        for pipe in list(self.pipes):
            pipe.release(now + self.rtt_s / 2)
        waiting, self._when_up = self._when_up, []
        for callback in waiting:
            callback()

    async def stall(self, seconds: float) -> None:
        """Hold every byte for a while."""
        self.down()
        await asyncio.sleep(seconds)
        self.up()


def _pieces(size: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the pieces a read of size bytes leaves in: one segment, then CHUNKs."""
    if size <= SEGMENT:
        yield 0, size
        return
    yield 0, SEGMENT
    for at in range(SEGMENT, size, CHUNK):
        yield at, min(at + CHUNK, size)


class _Pipe:
    """One direction of one connection: chunks read from `source` leave on `sink` when due."""

    def __init__(self, link: Link, direction: str, source: asyncio.Transport) -> None:
        self.link, self.direction, self.source = link, direction, source
        self.sink: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self.queue: collections.deque[tuple[float, bytes | None]] = collections.deque()
        self.held = 0
        self.last = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.paused = False  # reading of the source stopped (queue full, sink full, link down)
        self.sink_full = False

    def put(self, data: bytes | None) -> None:
        """A chunk (or EOF: b"", or the source's close: None) read from the source."""
        if not data:
            self.queue.append((self.last, data))
            data = b""
        for at, end in _pieces(len(data)):
            piece = data[at:end] if len(data) > SEGMENT else data
            self.last = self.link.due(self.direction, len(piece), _now(), self.last)
            self.held += len(piece)
            self.queue.append((self.last, piece))
        self._schedule()
        self._flow()

    def _schedule(self) -> None:
        if self.timer is None and self.queue and self.link.is_up and self.sink is not None:
            # (a timer may fire before its time on a loop counting whole milliseconds, as
            # uvloop's: _flush then sends nothing early and sets the timer again)
            self.timer = self.loop.call_later(max(0.0, self.queue[0][0] - _now()), self._flush)

    def _flush(self) -> None:
        self.timer = None
        if not self.link.is_up or self.sink is None:
            return
        now = _now()
        sink = self.sink
        while self.queue and self.queue[0][0] <= now:
            _, data = self.queue.popleft()
            if data is None or sink.is_closing():
                sink.close()
                self.queue.clear()
                self.link.pipes.discard(self)
                return
            if data:
                sink.write(data)
                self.held -= len(data)
                self.link.carried[self.direction] += len(data)
            elif sink.can_write_eof():
                with contextlib.suppress(OSError, RuntimeError):
                    sink.write_eof()
        self._schedule()
        self._flow()

    def _flow(self) -> None:
        """Pause or resume reading the source."""
        stop = self.held >= QUEUE_BYTES or self.sink_full or not self.link.is_up
        if stop and not self.paused:
            self.paused = True
            with contextlib.suppress(RuntimeError):
                self.source.pause_reading()
        elif not stop and self.paused:
            self.paused = False
            with contextlib.suppress(RuntimeError):
                self.source.resume_reading()

    def connect(self, sink: asyncio.Transport) -> None:
        self.sink = sink
        if self.queue:  # read during the handshake (uvloop reads a new connection at once,
            # paused or not): it leaves one way after the handshake, as with asyncio
            self.release(_now() + self.link.rtt_s / 2)
            return
        self._schedule()

    def hold(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._flow()

    def release(self, at: float) -> None:
        self.queue = collections.deque((max(due, at), data) for due, data in self.queue)
        self.last = max(self.last, at) if self.queue else self.last
        self._schedule()
        self._flow()

    def sink_paused(self, full: bool) -> None:
        self.sink_full = full
        self._flow()


class _End(asyncio.Protocol):
    """One side's socket: what it reads goes into `out` (toward the other side); what `into`
    holds is written to it."""

    def __init__(self, link: Link, direction: str) -> None:
        self.link, self.direction = link, direction
        self.out: _Pipe | None = None
        self.into: _Pipe | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's: not a subclass
        self.out = _Pipe(self.link, self.direction, self.transport)
        self.link.pipes.add(self.out)

    def data_received(self, data: bytes) -> None:
        assert self.out is not None
        self.out.put(data)

    def eof_received(self) -> bool:
        assert self.out is not None
        self.out.put(_EOF)
        return True  # half-close: the other direction goes on

    def pause_writing(self) -> None:
        if self.into is not None:
            self.into.sink_paused(True)

    def resume_writing(self) -> None:
        if self.into is not None:
            self.into.sink_paused(False)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.out is not None:
            self.out.put(None)  # the other side closes once what this one sent has left


class _Client(_End):
    """A peer's connection to the link: opens the inner one after the handshake's RTT."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert self.out is not None
        self.out.paused = True
        self.transport.pause_reading()  # type: ignore[union-attr]
        self.link.when_up(self._handshake)

    def _handshake(self) -> None:
        """The handshake's round trip, then the inner connection."""
        def start() -> None:
            task = asyncio.ensure_future(self._open())
            _OPENING.add(task)
            task.add_done_callback(_OPENING.discard)
        asyncio.get_running_loop().call_later(self.link.rtt_s, start)

    async def _open(self) -> None:
        assert self.transport is not None and self.out is not None
        if self.transport.is_closing():
            return
        loop = asyncio.get_running_loop()
        sock = None
        try:
            with in_netns(self.link.netns):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if self.link.source is not None:
                sock.bind((self.link.source, 0))
            sock.setblocking(False)
            await loop.sock_connect(sock, self.link.target)
            _, inner = await loop.create_connection(lambda: _End(self.link, "down"), sock=sock)
        except OSError:
            if sock is not None:
                sock.close()
            self.transport.close()
            return
        assert inner.out is not None and inner.transport is not None
        self.into, inner.into = inner.out, self.out
        self.out.connect(inner.transport)
        inner.out.connect(self.transport)
        self.out.paused = True
        self.out._flow()


_OPENING: set[asyncio.Future[None]] = set()


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop when it imports: less of the machine goes to emulating links (a link costs
    the robots and the primary no CPU), so the figures measured through them are less the
    emulator's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop
_CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def in_netns(fd: int | None) -> Iterator[None]:
    """This thread in the network namespace `fd` (None: stay), back in its own after: a
    socket made meanwhile lives there for good."""
    if fd is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns into the robot's network namespace")
        try:
            yield
        finally:
            if libc.setns(own, _CLONE_NEWNET) != 0:
                raise SystemExit("setns back into the hub's own network namespace failed")
    finally:
        os.close(own)


async def open_link(link: Link, listen: tuple[str, int], control: str
                    ) -> tuple[asyncio.Server, asyncio.Server]:
    """A link's listening socket (in the link's namespace) and its control socket."""
    loop = asyncio.get_running_loop()
    with in_netns(link.netns):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(listen)
        sock.listen(128)
        sock.setblocking(False)
        server = await loop.create_server(lambda: _Client(link, "up"), sock=sock)
    except BaseException:
        sock.close()
        raise
    Path(control).unlink(missing_ok=True)
    ctl = await asyncio.start_unix_server(lambda r, w: _control(link, r, w), control)
    return server, ctl


async def _control(link: Link, reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter) -> None:
    line = (await reader.readline()).decode().split()
    answer = "ok"
    if line[:1] == ["set"]:
        link.set(**{k: float(v) for k, v in (kv.split("=", 1) for kv in line[1:])})
    elif line[:1] == ["partition"]:
        if line[1:2] == ["on"]:
            link.down()
        else:
            link.up()
    elif line[:1] == ["stall"]:
        asyncio.get_running_loop().create_task(link.stall(float(line[1])))
    elif line[:1] == ["stats"]:
        answer = f"up={link.carried['up']} down={link.carried['down']}"
    else:
        answer = f"unknown command {line!r}"
    writer.write(answer.encode() + b"\n")
    await writer.drain()
    writer.close()


def _address(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


async def main(args: argparse.Namespace) -> None:
    if args.hub:
        await hub(args.hub)
        return
    link = Link(args.rtt_ms / 1000, args.jitter_ms / 1000, args.rate_bps,
                _address(args.target))
    server, control = await open_link(link, _address(args.listen), args.control)
    async with server, control:
        await asyncio.gather(server.serve_forever(), control.serve_forever())


async def hub(path: str) -> None:
    """Many links in one process (a 100-robot lab on 2 cores: one process wakes once for a
    fan-out to every robot, not once per robot). Each link's sockets live in its robot's
    network namespace; `add <netns path> <listen> <target> <control> [rtt_ms= jitter_ms=
    rate_bps=]` on the hub's control socket opens one, `remove <control>` closes it."""
    links: dict[str, tuple[Link, asyncio.Server, asyncio.Server, int]] = {}

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = (await reader.readline()).decode().split()
        answer = "ok"
        try:
            if line[:1] == ["add"] and len(line) >= 5:
                ns, listen, target, control = line[1:5]
                values = {k: float(v) for k, v in (kv.split("=", 1) for kv in line[5:])}
                fd = os.open(ns, os.O_RDONLY)
                link = Link(values.get("rtt_ms", 0) / 1000, values.get("jitter_ms", 0) / 1000,
                            values.get("rate_bps", 0), _address(target), fd)
                server, ctl = await open_link(link, _address(listen), control)
                links[control] = (link, server, ctl, fd)
            elif line[:1] == ["remove"] and len(line) == 2 and line[1] in links:
                link, server, ctl, fd = links.pop(line[1])
                link.down()
                server.close()
                ctl.close()
                os.close(fd)
            else:
                answer = f"unknown command {line!r}"
        except (OSError, ValueError) as exc:
            answer = f"failed: {exc}"
        writer.write(answer.encode() + b"\n")
        await writer.drain()
        writer.close()

    Path(path).unlink(missing_ok=True)
    control = await asyncio.start_unix_server(serve, path)
    async with control:
        await control.serve_forever()


@contextlib.contextmanager
def running(logs: Path, name: str, port: int, target: int, *args: str) -> Iterator[Path]:
    """An emulator process listening on 127.0.0.1:port for 127.0.0.1:target (extra options in
    `args`, e.g. "--rtt-ms", "20"), its log in logs/<name>.log; yields its control socket
    once it is up, and stops it (SIGINT, then SIGKILL) after."""
    import signal
    import subprocess
    import sys

    control = logs / f"{name}.sock"
    with open(logs / f"{name}.log", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fleet.linkemu", "--listen", f"127.0.0.1:{port}",
             "--target", f"127.0.0.1:{target}", "--control", str(control), *args],
            cwd=Path(__file__).resolve().parents[2], stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not control.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {name} link did not start; see {logs / name}.log")
            time.sleep(0.05)
        yield control
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def command(control: str | Path, line: str, timeout: float = 5.0) -> str:
    """Send one control line to a running emulator; its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(control))
        sock.sendall(line.encode() + b"\n")
        return sock.makefile().readline().strip()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen")
    ap.add_argument("--target")
    ap.add_argument("--control")
    ap.add_argument("--hub", help="serve many links, added on this control socket")
    ap.add_argument("--rtt-ms", type=float, default=0.0)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--rate-bps", type=float, default=0.0)
    parsed = ap.parse_args()
    if not parsed.hub and not (parsed.listen and parsed.target and parsed.control):
        ap.error("--listen, --target and --control are needed (or --hub)")
    with contextlib.suppress(KeyboardInterrupt):
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(main(parsed))
