"""Figures of a simulated fleet against its primary (bench/fleet_sim.py): joins, the idle
primary, cached and live merged reads, relayed fault events, a partition, a download, a
restart; over sites also the site level beside the fleet primary's, and the ids through two
levels. Each returns rows for the closing table: (figure, target, measured)."""

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


def cpu_of(pids: list[int]) -> float:
    """CPU seconds of the processes together, to the nanosecond (the schedstat of each of
    their threads; /proc/PID/stat counts in clock ticks of 10 ms)."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended meanwhile
    return total / 1e9


def established(tables: list[str], inodes: set[str]) -> int:
    """ESTABLISHED TCP connections among the rows of /proc/net/tcp{,6} (`tables`, each the
    file's text) whose socket inode is one of `inodes`."""
    n = 0
    for text in tables:
        for line in text.splitlines()[1:]:
            cols = line.split()
            n += len(cols) > 9 and cols[3] == "01" and cols[9] in inodes
    return n


def tcp_connections(pid: int) -> int:
    """The process's established TCP connections (both ends on loopback count once each)."""
    inodes: set[str] = set()
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    tables = []
    for name in ("tcp", "tcp6"):
        try:
            tables.append(Path(f"/proc/{pid}/net/{name}").read_text())
        except OSError:
            pass
    return established(tables, inodes)


def connections_row(label: str, pid: int, robots: int, sites: list[int] | None = None
                    ) -> list[Row]:
    """TCP connections the gateway holds (and the sites', when over sites), per robot."""
    top = tcp_connections(pid)
    text = f"{top} ({top / robots:.2f} per robot)"
    if sites:
        below = sum(tcp_connections(p) for p in sites)
        text = (f"fleet primary {top} ({top / len(sites):.1f} per site); sites {below} "
                f"({below / robots:.2f} per robot)")
    print(f"TCP connections {label}: {text}", flush=True)
    return [(f"TCP connections {label}", "", text)]


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


async def measure_idle(pid: int, n: int, seconds: float, workers: list[int],
                       sites: list[int] | None = None) -> list[Row]:
    """The idle primary's CPU and RSS per robot; with `sites` (their pids) also the site
    primaries' together, per robot and per site."""
    sites = sites or []
    mark = machine_busy()
    c0, _ = cpu_rss(pid)
    w0 = sum(cpu_rss(w)[0] for w in workers)
    s0 = sum(cpu_rss(p)[0] for p in sites)
    t0 = time.monotonic()
    await asyncio.sleep(seconds)
    dt = time.monotonic() - t0
    c1, rss = cpu_rss(pid)
    w1 = sum(cpu_rss(w)[0] for w in workers)
    s1, s_rss = 0.0, 0
    for p in sites:
        c, r = cpu_rss(p)
        s1, s_rss = s1 + c, s_rss + r
    per = (c1 - c0) / dt * 1e3 / n
    name = "fleet primary" if sites else "primary"
    print(f"idle {name}: {per:.3f} ms/s CPU and {rss / n / 2**20:.3f} MiB RSS per robot "
          f"({(c1 - c0) / dt * 1e3:.0f} ms/s, {rss / 2**20:.0f} MiB in all over {dt:.0f} s); "
          f"simulator processes {(w1 - w0) / dt * 1e3:.0f} ms/s; {machine_since(mark)}",
          flush=True)
    rows = [(f"idle {name} CPU per robot (ms/s)", "<= 0.2", f"{per:.3f}"),
            (f"{name} RSS per robot (MiB)", "<= 0.5", f"{rss / n / 2**20:.3f}")]
    rows += connections_row("idle, no stream client", pid, n, sites)
    if sites:
        k = len(sites)
        s_cpu = (s1 - s0) / dt * 1e3
        print(f"idle site primaries: {s_cpu / n:.3f} ms/s CPU and {s_rss / n / 2**20:.3f} MiB "
              f"RSS per robot ({s_cpu / k:.0f} ms/s, {s_rss / k / 2**20:.0f} MiB per site of "
              f"{n / k:.0f}); fleet primary per site {(c1 - c0) / dt * 1e3 / k:.1f} ms/s, "
              f"{rss / k / 2**20:.1f} MiB", flush=True)
        rows += [("idle fleet primary per site: CPU (ms/s); RSS (MiB)", "",
                  f"{(c1 - c0) / dt * 1e3 / k:.1f}; {rss / k / 2**20:.1f}"),
                 ("idle site primaries CPU per robot (ms/s); per site", "(one level) <= 0.2",
                  f"{s_cpu / n:.3f}; {s_cpu / k:.0f}"),
                 ("site primaries RSS per robot (MiB); per site", "(one level) <= 0.5",
                  f"{s_rss / n / 2**20:.3f}; {s_rss / k / 2**20:.0f}")]
    return rows


async def measure_reads(client: Client, reads: int, rtt_ms: float, label: str = "",
                        figures: dict[str, tuple[float, float, float]] | None = None,
                        pid: int = 0, below: list[int] | None = None) -> list[Row]:
    """Cached and live merged reads; `figures` gets path -> (cached p50, live p50, live p99)
    in ms; `label` names the gateway read in the table (a site). With `pid` (the gateway
    read) also its CPU per read, and the CPU of the gateways `below` it (the sites) together."""
    mark = machine_busy()
    rows: list[Row] = []
    below = below or []
    for path in ("/version-info", "/functions/perception/data"):
        await client.get(path)  # fill the cache
        g0, b0 = cpu_of([pid] if pid else []), cpu_of(below)
        cached = [(await client.get(path))[0] * 1e3 for _ in range(reads)]
        g1, b1 = cpu_of([pid] if pid else []), cpu_of(below)
        live: list[float] = []
        failed = 0
        for k in range(max(10, reads // 4)):
            took, status, body = await client.get(path, {"X-Client-Id": f"live-{k}-{time.time()}"})
            live.append(took * 1e3)
            failed += bool(json.loads(body).get("failed_peers")) if status == 200 else 1
        g2, b2 = cpu_of([pid] if pid else []), cpu_of(below)
        if figures is not None:
            figures[path] = (pct(cached, .5), pct(live, .5), pct(live, .99))
        if pid:
            per_cached, per_live = (g1 - g0) / reads * 1e3, (g2 - g1) / len(live) * 1e3
            text = f"{per_cached:.2f} / {per_live:.1f}"
            if below:
                text += (f"; sites together {(b1 - b0) / reads * 1e3:.2f} / "
                         f"{(b2 - b1) / len(live) * 1e3:.1f}")
            print(f"{label}{path}: CPU per merged read, cached / live: {text} ms", flush=True)
            rows.append((f"{label}CPU per merged {path} read, cached / live (ms)", "", text))
        print(f"{label}{path}: cached merged p50 {pct(cached, .5):.2f} ms, p99 "
              f"{pct(cached, .99):.2f}"
              f" ms; live merged p50 {pct(live, .5):.1f} ms, p99 {pct(live, .99):.1f} ms "
              f"({len(live)} reads, {failed} partial); {machine_since(mark)}", flush=True)
        rows += [(f"{label}cached merged {path} p50 / p99 (ms)", "<= 10",
                  f"{pct(cached, .5):.2f} / {pct(cached, .99):.2f}"),
                 (f"{label}live merged {path} p50 / p99 (ms)",
                  f"<= {rtt_ms + 50:.0f} / {rtt_ms + 200:.0f}",
                  f"{pct(live, .5):.1f} / {pct(live, .99):.1f}")]
    return rows


async def measure_forward(client: Client, app: str, reads: int, rtt_ms: float,
                          label: str = "", figures: dict[str, float] | None = None
                          ) -> list[Row]:
    took = [(await client.get(f"/apps/{app}/faults"))[0] * 1e3 for _ in range(reads)]
    if figures is not None:
        figures["p50"], figures["p99"] = pct(took, .5), pct(took, .99)
    print(f"{label}forwarded read of one robot's app ({app}): p50 {pct(took, .5):.1f} ms, p99 "
          f"{pct(took, .99):.1f} ms", flush=True)
    return [(f"{label}forwarded read p50 / p99 (ms)", f"(RTT {rtt_ms:.0f})",
             f"{pct(took, .5):.1f} / {pct(took, .99):.1f}")]


Raise = Callable[[str, str], Awaitable[float]]


async def measure_events(events: Events, names: list[str], raise_fault: Raise,
                         rate: float, below: dict[str, Events] | None = None,
                         level_of: dict[str, str] | None = None) -> list[Row]:
    """A fault raised on every robot (at `rate` per second); delay from each robot's event
    time to its arrival on the primary's stream. With `below` (site -> its stream) and
    `level_of` (robot -> site): also to its site's stream, and the difference."""
    stamp = int(time.time()) % 100000
    # the relays (re)open once a client holds the stream: wait until events of robots spread
    # over the fleet arrive before timing any
    t0 = time.monotonic()
    probes = {f"CANARY_{stamp}_{k}": await raise_fault(name, f"CANARY_{stamp}_{k}")
              for k, name in enumerate(names[::max(1, len(names) // 10)])}
    await wait_for(lambda: _true(all(c in events.by_code for c in probes)), 120)
    canary_of = dict(zip(probes, names[::max(1, len(names) // 10)], strict=True))
    for site, stream in (below or {}).items():
        mine = [c for c, n in canary_of.items() if (level_of or {}).get(n) == site]
        await wait_for(lambda s=stream, mine=mine: _true(  # type: ignore[misc]
            all(c in s.by_code for c in mine)), 30)
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
    rows = [("fault events relayed p99 (ms); lost", "<= 300; 0",
             f"{pct(delays, .99):.0f} (p50 {pct(delays, .5):.0f}); {lost} of {len(sent)}")]
    if below and level_of:
        site_delays, extra = [], []
        for k, name in enumerate(names):
            code = f"SIM_{stamp}_{k}"
            at = below[level_of[name]].by_code.get(code)
            if at is None:
                continue
            site_delays.append((at - sent[code]) * 1e3)
            if code in events.by_code:
                extra.append((events.by_code[code] - at) * 1e3)
        site_lost = len(sent) - len(site_delays)
        print(f"fault events at the sites' streams: {len(site_delays)}/{len(sent)} "
              f"({site_lost} lost); delay p50 {pct(site_delays, .5):.0f} ms, p99 "
              f"{pct(site_delays, .99):.0f} ms; site to fleet primary p50 {pct(extra, .5):.0f} "
              f"ms, p99 {pct(extra, .99):.0f} ms", flush=True)
        rows += [("at the sites: fault events p99 (ms); lost", "<= 300; 0",
                  f"{pct(site_delays, .99):.0f} (p50 {pct(site_delays, .5):.0f}); "
                  f"{site_lost} of {len(sent)}"),
                 ("extra level: site stream to fleet primary's, p50 / p99 (ms)", "",
                  f"{pct(extra, .5):.0f} / {pct(extra, .99):.0f}")]
    return rows


async def _true(value: bool) -> bool:
    return value


async def measure_partition(owners: dict[str, Client], events: Events, cut: list[str],
                            partition: Callable[[list[str], bool], Awaitable[None]],
                            raise_fault: Raise, seconds: float,
                            raise_on: list[str] | None = None, what: str = "") -> list[Row]:
    """Cut `cut` (robots, or a site) off the gateway in `owners`; a fault is raised on each
    of `raise_on` (default: the cut robots) meanwhile."""
    mark = machine_busy()
    raise_on = cut if raise_on is None else raise_on
    what = what or f"{len(cut)} robots"
    await partition(cut, True)
    t0 = time.monotonic()
    off = await watch(owners, cut, "offline", 30)
    stamp = int(time.time()) % 100000
    codes = {f"PART_{stamp}_{k}": name for k, name in enumerate(raise_on)}
    for code, name in codes.items():  # raised behind the partition
        await raise_fault(name, code)
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - t0)))
    await partition(cut, False)
    back = await watch(owners, cut, "online", 30)
    await wait_for(lambda: _true(all(c in events.by_code for c in codes)), 15)
    lost = [c for c in codes if c not in events.by_code]
    worst_off = max(off.values(), default=float("nan"))
    worst_on = max(back.values(), default=float("nan"))
    print(f"{seconds:.0f} s partition of {what}: all offline after "
          f"{worst_off:.2f} s ({len(off)}/{len(cut)}), online {worst_on:.2f} s after the heal "
          f"({len(back)}/{len(cut)}); events raised meanwhile lost: {len(lost)}; "
          f"{machine_since(mark)}", flush=True)
    return [(f"{seconds:.0f} s partition of {what}: offline after / online after heal (s)",
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
                          names: list[str], budget: float, what: str = "robots") -> list[Row]:
    """Stop and start the primary; seconds from its new process's start until every robot is
    back online (`restart` returns how long the new process took to answer /health)."""
    start_s = await restart()
    back = await watch(owners, names, "online", budget)
    took = start_s + max(back.values(), default=float("nan"))
    print(f"primary restarted: {len(back)}/{len(names)} {what} back, the last {took:.1f} s "
          f"after the new process started (it answered /health after {start_s:.1f} s)",
          flush=True)
    return [(f"primary restart: all {what} back, from its start (s)", "<= 30",
             f"{fmt(took)} ({len(back)}/{len(names)}; answering after {start_s:.1f})")]


def table(rows: list[Row], title: str) -> str:
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = [title, f"{'figure':<{w0}}  {'target':<{w1}}  measured"]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def app_of(apps_body: bytes, robot: str, via: str | None = None) -> str | None:
    """The fleet id of `robot`'s lidar app in the primary's /apps (`via`: the site that
    contributes it, whose id names the robot)."""
    for app in json.loads(apps_body).get("items", []):
        contributors = app.get("x-vendor", {}).get("contributors", [])
        if not app["id"].endswith(APP):
            continue
        if via is None and contributors[:1] == [robot]:
            return str(app["id"])
        if via is not None and contributors[:1] == [via] and app["id"] == f"{robot}__{APP}":
            return str(app["id"])
    return None


def check_ids(apps_body: bytes, site_of: dict[str, str]) -> list[str]:
    """What is wrong with the fleet primary's app ids over sites (`site_of`: robot -> site):
    each robot's app is listed once by the id its site qualified it with (`r7__lidar_sensor`,
    robot names being unique over the sites), contributed by that site alone; no other app of
    the kind, so none qualified twice (`site0__r7__lidar_sensor`)."""
    want = {f"{robot}__{APP}": site for robot, site in site_of.items()}
    seen: set[str] = set()
    problems: list[str] = []
    for app in json.loads(apps_body).get("items", []):
        aid = str(app["id"])
        if not aid.endswith(APP):
            continue
        contributors = app.get("x-vendor", {}).get("contributors", [])
        if aid not in want:
            problems.append(f"app {aid} (from {contributors}) is no robot's id as its site "
                            f"qualified it")
        elif aid in seen:
            problems.append(f"app {aid} listed twice")
        elif contributors != [want[aid]]:
            problems.append(f"app {aid} contributed by {contributors}, not [{want[aid]}]")
        seen.add(aid)
    missing = sorted(set(want) - seen)
    if missing:
        problems.append(f"{len(missing)} robots' apps missing, e.g. {missing[:3]}")
    return problems


def check_paths(items: list[dict[str, Any]], site_of: dict[str, str], what: str,
                robots: list[str] | None = None) -> list[str]:
    """What is wrong with `x-vendor.peer` / `peer_path` of items (or event data) that passed two
    levels: every robot of `robots` (default: all of site_of) has one with peer = its site and
    peer_path = [site, robot]; none has a path of another robot's site."""
    found: set[str] = set()
    problems: list[str] = []
    for item in items:
        vendor = item.get("x-vendor") or {}
        path = vendor.get("peer_path")
        if not isinstance(path, list) or len(path) < 2:
            continue
        robot = path[-1]
        if site_of.get(robot) != path[0] or vendor.get("peer") != path[0] or len(path) != 2:
            problems.append(f"{what}: peer {vendor.get('peer')!r} path {path} for {robot}")
            continue
        found.add(robot)
    missing = sorted(set(robots if robots is not None else site_of) - found)
    if missing:
        problems.append(f"{what}: {len(missing)} robots without peer_path [site, robot], "
                        f"e.g. {missing[:3]}")
    return problems


def extra_row(figure: str, top: float, site: float, unit: str = "ms", digits: int = 1) -> Row:
    """A row of the extra level's cost: the fleet primary's figure less the site's."""
    return (f"extra level: {figure} ({unit})", "",
            f"{fmt(top - site, digits=digits)} (fleet primary {fmt(top, digits=digits)}, "
            f"site {fmt(site, digits=digits)})")
