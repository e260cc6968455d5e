"""The primary's CPU per beacon line: gateway/federation/beacon.py's BeaconReader against a
reader of the same streams by a line per `readline()` with a timeout around each (the way it read them
before), in one run.

A child process serves N beacon streams (a line `data: <etag>` every interval, chunked, as a
robot gateway does); this process opens N readers of one kind at a time on one aiohttp session
and counts its own CPU time over the window. Printed: CPU per line (µs) and per idle peer
(ms/s at the beacon's default 0.5 s interval) for each kind, and the ratio. What a primary of
1,000 idle robots spends on their beacons is 1,000 times the per-peer figure.

Usage: python bench/beacon_reader.py [--peers 300] [--interval-ms 100] [--window-s 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from gateway.federation.beacon import BeaconReader  # noqa: E402
from gateway.process.waits import within  # noqa: E402

SERVER = r"""
import asyncio, sys
from aiohttp import web
interval = float(sys.argv[1])
async def beacon(request):
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    await resp.write(b": beacon\n\n")
    loop = asyncio.get_running_loop(); due = loop.time()
    while request.transport is not None and not request.transport.is_closing():
        line = b"data: 0123456789abcdef\n\n"
        request.transport.write(b"%x\r\n%b\r\n" % (len(line), line))
        due += interval
        await asyncio.sleep(max(0.0, due - loop.time()))
    return resp
app = web.Application(); app.router.add_get("/beacon", beacon)
async def main():
    runner = web.AppRunner(app); await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0); await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


class LineReader:
    """The baseline: a line per readline(), each inside a timeout (the earlier reader)."""

    def __init__(self, session: aiohttp.ClientSession, url: str, budget_s: float) -> None:
        self.session, self.url, self.budget_s = session, url, budget_s
        self.lines = 0
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def _read(self) -> None:
        async with self.session.get(self.url) as resp:
            while True:
                line = await within(resp.content.readline(), self.budget_s)
                if not line.endswith(b"\n"):
                    return
                if line.startswith(b"data: "):
                    self.lines += 1


async def measure(kind: str, url: str, peers: int, interval_s: float,
                  window_s: float) -> tuple[float, int]:
    """CPU seconds of this process over the window and the lines read, with `peers` readers."""
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        counted = [0]

        def changed() -> None:
            counted[0] += 1

        readers: list[BeaconReader | LineReader] = []
        for _ in range(peers):
            if kind == "BeaconReader":
                readers.append(BeaconReader(session, url, {}, interval_s, 5.0, lambda: None,
                                            changed, slack_s=lambda: 1.0))
            else:
                readers.append(LineReader(session, url, interval_s + 1.0))
        for r in readers:
            r.start()
        await asyncio.sleep(2.0)  # every stream open and reading
        lines0 = sum(r.lines for r in readers if isinstance(r, LineReader))
        cpu0, t0 = time.process_time(), time.monotonic()
        await asyncio.sleep(window_s)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
        lines = sum(r.lines for r in readers if isinstance(r, LineReader)) - lines0
        if kind == "BeaconReader":  # every reader kept up: a line within the last interval
            fresh = sum(1 for r in readers
                        if isinstance(r, BeaconReader) and r.fresh(time.monotonic()))
            assert fresh == peers, f"{peers - fresh} beacon readers went stale"
            lines = round(peers * wall / interval_s)
        for r in readers:
            await r.stop()
    return cpu, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peers", type=int, default=300)
    ap.add_argument("--interval-ms", type=int, default=100)
    ap.add_argument("--window-s", type=float, default=10.0)
    args = ap.parse_args()
    interval = args.interval_ms / 1000.0
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(interval)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{port}/beacon"
        print(f"{args.peers} streams, a line every {args.interval_ms} ms, {args.window_s:.0f} s "
              f"window (pid {os.getpid()})")
        figures: dict[str, list[float]] = {}
        for kind in ("LineReader", "BeaconReader", "LineReader", "BeaconReader"):
            cpu, lines = asyncio.run(measure(kind, url, args.peers, interval, args.window_s))
            per_line = cpu / max(1, lines) * 1e6
            figures.setdefault(kind, []).append(per_line)
            print(f"  {kind:13s} {lines:7d} lines  {cpu * 1000:8.0f} ms CPU  "
                  f"{per_line:6.1f} µs/line  {per_line * 2 / 1000:.3f} ms/s per idle peer "
                  "at 0.5 s")
        base, new = min(figures["LineReader"]), min(figures["BeaconReader"])
        print(f"best of two: baseline {base:.1f} µs/line, BeaconReader {new:.1f} µs/line, "
              f"ratio {new / base:.2f} (lower is better)")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
