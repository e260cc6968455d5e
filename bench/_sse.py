"""Shared parts of the SSE benchmarks: worker processes holding SSE clients, percentiles."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def yield_cores(nice: int) -> None:
    """Lower this process's CPU priority by `nice`, also against processes of other sessions.

    With the kernel's session autogroups (`/proc/sys/kernel/sched_autogroup_enabled`), a
    process's nice value ranks it only within its session: against a gateway started in a
    session of its own, a niced worker still competed with it at full weight. A session of
    its own whose autogroup is niced makes the nice hold against every other session.
    """
    os.setsid()
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass  # no autogroups: the plain nice below is enough
    os.nice(nice)


class Workers:
    """Worker processes (`script --worker <args>`), each printing "ready" then its latencies."""

    def __init__(self, script: str, worker_args: list[list[str]], nice: int = 0) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        for args in worker_args:
            self.procs.append(subprocess.Popen([sys.executable, script, "--worker", *args],
                                               stdout=subprocess.PIPE, text=True,
                                               preexec_fn=(lambda: yield_cores(nice)) if nice else None))
        for p in self.procs:
            assert p.stdout is not None
            line = p.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"worker failed to connect: {line!r}")

    def latencies(self) -> list[float]:
        """Every worker's latencies (waits for the workers to finish)."""
        out: list[float] = []
        for p in self.procs:
            stdout, _ = p.communicate(timeout=300)
            out.extend(json.loads(stdout.strip().splitlines()[-1]))
        return out

    def stop(self) -> None:
        """Kill the workers still running."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


async def run_clients(port: int, paths: list[str], expect: int,
                      on_data: Callable[[bytes, int], bool]) -> None:
    """Worker side: one SSE client per path; prints "ready" once all are connected.

    on_data(data, arrival_ns) sees every `data:` line and says whether the frame counts; each
    client ends after `expect` counted frames.
    """
    import aiohttp  # noqa: PLC0415 - aiohttp only in the worker processes

    ready = asyncio.Event()
    connected = 0

    async def client(session: aiohttp.ClientSession, path: str) -> None:
        nonlocal connected
        async with session.get(f"http://127.0.0.1:{port}{path}") as resp:
            if resp.status != 200:
                raise RuntimeError(f"{path} answered {resp.status}")
            got = 0
            async for line in resp.content:
                if line.startswith(b":connected"):
                    connected += 1
                    if connected == len(paths):
                        ready.set()
                elif line.startswith(b"data: "):
                    if on_data(line[6:], time.time_ns()):
                        got += 1
                        if got == expect:
                            return

    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks = [asyncio.ensure_future(client(session, p)) for p in paths]
        await asyncio.wait_for(ready.wait(), 120)
        print("ready", flush=True)
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
