"""Figures of a simulated fleet against its primary (bench/fleet_sim.py): joins, the idle
primary, cached and live merged reads, relayed fault events, a partition, a download, a
restart. Each returns rows for the closing table: (figure, target, measured)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from bench._sim_robot import APP, pct

Row = tuple[str, str, str]
API = "/api/v1"


def cpu_rss(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS bytes) of a process from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), rss


def machine_busy() -> tuple[int, int]:
    cols = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = cols[3] + cols[4]
    return sum(cols) - idle, sum(cols)


def machine_since(mark: tuple[int, int]) -> str:
    busy, total = machine_busy()
    share = (busy - mark[0]) / max(1, total - mark[1])
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"machine {share:.0%} busy of {os.cpu_count()} cores, load {load}"


def fmt(x: float, unit: str = "", digits: int = 1) -> str:
    return "-" if x != x else f"{x:.{digits}f}{unit}"


class Client:
    """HTTP to one gateway (the primary, or a site primary)."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session, self.base = session, base

    async def get(self, path: str, headers: dict[str, str] | None = None,
                  timeout: float = 60.0) -> tuple[float, int, bytes]:
        t0 = time.perf_counter()
        async with self.session.get(self.base + API + path, headers=headers or {},
                                    timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            body = await resp.read()
        return time.perf_counter() - t0, resp.status, body

    async def peers(self) -> dict[str, str]:
        """name -> status of every peer in /health."""
        try:
            _, status, body = await self.get("/health", timeout=30)
            if status != 200:
                return {}
            return {p["name"]: p["status"] for p in json.loads(body).get("peers", [])}
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError):
            return {}


class Events:
    """The primary's /faults/stream: (arrival wall time, data) of every event."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.items: list[tuple[float, dict[str, Any]]] = []
        self.by_code: dict[str, float] = {}
        self.task = asyncio.get_running_loop().create_task(self._read(session, base))

    async def _read(self, session: aiohttp.ClientSession, base: str) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with session.get(base + API + "/faults/stream", timeout=timeout) as resp:
            buf = b""
            async for chunk in resp.content.iter_any():
                now = time.time()
                buf += chunk
                while b"\n\n" in buf:
                    block, buf = buf.split(b"\n\n", 1)
                    for line in block.split(b"\n"):
                        if line.startswith(b"data: "):
                            data = json.loads(line[6:])
                            self.items.append((now, data))
                            code = (data.get("fault") or {}).get("fault_code")
                            if code:
                                self.by_code.setdefault(code, now)

    def close(self) -> None:
        self.task.cancel()


async def wait_for(check: Callable[[], Awaitable[bool]], budget: float, every: float = 0.2
                   ) -> bool:
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(every)
    return False


async def watch(owners: dict[str, Client], names: list[str], status: str, budget: float,
                t0: float | None = None) -> dict[str, float]:
    """Seconds (from t0, default now) until each robot shows `status` on the gateway it
    joined; watching ends `budget` s after t0."""
    t0 = time.monotonic() if t0 is None else t0
    out: dict[str, float] = {}
    clients = {id(c): c for c in owners.values()}
    while len(out) < len(names) and time.monotonic() - t0 < budget:
        seen: dict[str, str] = {}
        for peers in await asyncio.gather(*(c.peers() for c in clients.values())):
            seen.update(peers)
        now = time.monotonic() - t0
        for name in names:
            if name not in out and seen.get(name) == status:
                out[name] = now
        await asyncio.sleep(0.05)
    return out


async def measure_idle(pid: int, n: int, seconds: float, workers: list[int]) -> list[Row]:
    mark = machine_busy()
    c0, _ = cpu_rss(pid)
    w0 = sum(cpu_rss(w)[0] for w in workers)
    t0 = time.monotonic()
    await asyncio.sleep(seconds)
    dt = time.monotonic() - t0
    c1, rss = cpu_rss(pid)
    w1 = sum(cpu_rss(w)[0] for w in workers)
    per = (c1 - c0) / dt * 1e3 / n
    print(f"idle primary: {per:.3f} ms/s CPU and {rss / n / 2**20:.3f} MiB RSS per robot "
          f"({(c1 - c0) / dt * 1e3:.0f} ms/s, {rss / 2**20:.0f} MiB in all over {dt:.0f} s); "
          f"simulator processes {(w1 - w0) / dt * 1e3:.0f} ms/s; {machine_since(mark)}",
          flush=True)
    return [("idle primary CPU per robot (ms/s)", "<= 0.2", f"{per:.3f}"),
            ("primary RSS per robot (MiB)", "<= 0.5", f"{rss / n / 2**20:.3f}")]


async def measure_reads(client: Client, reads: int, rtt_ms: float) -> list[Row]:
    mark = machine_busy()
    rows: list[Row] = []
    for path in ("/version-info", "/functions/perception/data"):
        await client.get(path)  # fill the cache
        cached = [(await client.get(path))[0] * 1e3 for _ in range(reads)]
        live: list[float] = []
        failed = 0
        for k in range(max(10, reads // 4)):
            took, status, body = await client.get(path, {"X-Client-Id": f"live-{k}-{time.time()}"})
            live.append(took * 1e3)
            failed += bool(json.loads(body).get("failed_peers")) if status == 200 else 1
        print(f"{path}: cached merged p50 {pct(cached, .5):.2f} ms, p99 {pct(cached, .99):.2f}"
              f" ms; live merged p50 {pct(live, .5):.1f} ms, p99 {pct(live, .99):.1f} ms "
              f"({len(live)} reads, {failed} partial); {machine_since(mark)}", flush=True)
        rows += [(f"cached merged {path} p50 / p99 (ms)", "<= 10",
                  f"{pct(cached, .5):.2f} / {pct(cached, .99):.2f}"),
                 (f"live merged {path} p50 / p99 (ms)",
                  f"<= {rtt_ms + 50:.0f} / {rtt_ms + 200:.0f}",
                  f"{pct(live, .5):.1f} / {pct(live, .99):.1f}")]
    return rows


async def measure_forward(client: Client, app: str, reads: int, rtt_ms: float) -> list[Row]:
    took = [(await client.get(f"/apps/{app}/faults"))[0] * 1e3 for _ in range(reads)]
    print(f"forwarded read of one robot's app: p50 {pct(took, .5):.1f} ms, p99 "
          f"{pct(took, .99):.1f} ms", flush=True)
    return [("forwarded read p50 / p99 (ms)", f"(RTT {rtt_ms:.0f})",
             f"{pct(took, .5):.1f} / {pct(took, .99):.1f}")]


Raise = Callable[[str, str], Awaitable[float]]


async def measure_events(events: Events, names: list[str], raise_fault: Raise,
                         rate: float) -> list[Row]:
    """A fault raised on every robot (at `rate` per second); delay from each robot's event
    time to its arrival on the primary's stream."""
    stamp = int(time.time()) % 100000
    # the relays (re)open once a client holds the stream: wait until events of robots spread
    # over the fleet arrive before timing any
    t0 = time.monotonic()
    probes = {f"CANARY_{stamp}_{k}": await raise_fault(name, f"CANARY_{stamp}_{k}")
              for k, name in enumerate(names[::max(1, len(names) // 10)])}
    await wait_for(lambda: _true(all(c in events.by_code for c in probes)), 120)
    print(f"relays carry events after {time.monotonic() - t0:.1f} s "
          f"({sum(c in events.by_code for c in probes)}/{len(probes)} canaries)", flush=True)
    mark = machine_busy()
    sent: dict[str, float] = {}
    for k, name in enumerate(names):
        code = f"SIM_{stamp}_{k}"
        sent[code] = await raise_fault(name, code)
        await asyncio.sleep(max(0.0, 1 / rate))
    await wait_for(lambda: _true(all(c in events.by_code for c in sent)), 15)
    delays = [(events.by_code[c] - t) * 1e3 for c, t in sent.items() if c in events.by_code]
    lost = len(sent) - len(delays)
    print(f"fault events relayed: {len(delays)}/{len(sent)} ({lost} lost); delay p50 "
          f"{pct(delays, .5):.0f} ms, p99 {pct(delays, .99):.0f} ms, max "
          f"{max(delays, default=float('nan')):.0f} ms; {machine_since(mark)}", flush=True)
    return [("fault events relayed p99 (ms); lost", "<= 300; 0",
             f"{pct(delays, .99):.0f} (p50 {pct(delays, .5):.0f}); {lost} of {len(sent)}")]


async def _true(value: bool) -> bool:
    return value


async def measure_partition(owners: dict[str, Client], events: Events, cut: list[str],
                            partition: Callable[[list[str], bool], Awaitable[None]],
                            raise_fault: Raise, seconds: float) -> list[Row]:
    mark = machine_busy()
    await partition(cut, True)
    t0 = time.monotonic()
    off = await watch(owners, cut, "offline", 30)
    stamp = int(time.time()) % 100000
    codes = {f"PART_{stamp}_{k}": name for k, name in enumerate(cut)}
    for code, name in codes.items():  # raised behind the partition
        await raise_fault(name, code)
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - t0)))
    await partition(cut, False)
    back = await watch(owners, cut, "online", 30)
    await wait_for(lambda: _true(all(c in events.by_code for c in codes)), 15)
    lost = [c for c in codes if c not in events.by_code]
    worst_off = max(off.values(), default=float("nan"))
    worst_on = max(back.values(), default=float("nan"))
    print(f"{seconds:.0f} s partition of {len(cut)} robots: all offline after "
          f"{worst_off:.2f} s ({len(off)}/{len(cut)}), online {worst_on:.2f} s after the heal "
          f"({len(back)}/{len(cut)}); events raised meanwhile lost: {len(lost)}; "
          f"{machine_since(mark)}", flush=True)
    return [(f"{seconds:.0f} s partition of {len(cut)}: offline after / online after heal (s)",
             "<= 3 / <= 3", f"{fmt(worst_off, digits=2)} ({len(off)}/{len(cut)}) / "
             f"{fmt(worst_on, digits=2)} ({len(back)}/{len(cut)})"),
            ("events raised during the partition lost", "0", f"{len(lost)} of {len(codes)}")]


async def measure_download(client: Client, app: str, rate_bps: float) -> list[Row]:
    _, _, body = await client.get(f"/apps/{app}/bulk-data/rosbags")
    rec = json.loads(body)["items"][0]
    url = client.base + API + f"/apps/{app}/bulk-data/rosbags/{rec['id']}"
    t0 = time.perf_counter()
    async with client.session.get(url, timeout=aiohttp.ClientTimeout(total=600)) as resp:
        first = time.perf_counter() - t0
        data = await resp.read()
    took = time.perf_counter() - t0
    share = len(data) * 8 / rate_bps / took if rate_bps else float("nan")
    print(f"recording {len(data)} bytes through the primary in {took:.2f} s: {share:.0%} of "
          f"the link, headers after {first * 1e3:.0f} ms", flush=True)
    return [("recording through the primary, share of the link; headers (ms)", ">= 90%",
             f"{share:.0%}; {first * 1e3:.0f}")]


async def measure_restart(restart: Callable[[], Awaitable[float]], owners: dict[str, Client],
                          names: list[str], budget: float) -> list[Row]:
    """Stop and start the primary; seconds from its new process's start until every robot is
    back online (`restart` returns how long the new process took to answer /health)."""
    start_s = await restart()
    back = await watch(owners, names, "online", budget)
    took = start_s + max(back.values(), default=float("nan"))
    print(f"primary restarted: {len(back)}/{len(names)} robots back, the last {took:.1f} s "
          f"after the new process started (it answered /health after {start_s:.1f} s)",
          flush=True)
    return [("primary restart: all robots back, from its start (s)", "<= 30",
             f"{fmt(took)} ({len(back)}/{len(names)}; answering after {start_s:.1f})")]


def table(rows: list[Row], title: str) -> str:
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = [title, f"{'figure':<{w0}}  {'target':<{w1}}  measured"]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def app_of(apps_body: bytes, robot: str) -> str | None:
    """The fleet id of `robot`'s lidar app in the primary's /apps."""
    for app in json.loads(apps_body).get("items", []):
        contributors = app.get("x-vendor", {}).get("contributors", [])
        if app["id"].endswith(APP) and contributors[:1] == [robot]:
            return str(app["id"])
    return None
