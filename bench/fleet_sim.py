"""A simulated fleet: N robots that speak to a real primary gateway as robot gateways do.

Each simulated robot (bench/_sim_robot.py) serves what a robot gateway answers a primary: the
health probe, its entity declaration (ETag, 304), the beacon, the fan-out list reads of its
entities, /version-info and /faults, its fault stream (numbered events, Last-Event-ID resume,
refetch), forwarded requests (a fault cleared, recordings by bulk-data with Range). The answers
are a real robot gateway's, captured on the demo robot (bench/_sim_capture.py), with the robot's
own ids. Each robot has its own loopback address (127.77.x.y) and an emulated link (RTT, rate,
loss; tests/fleet/linkemu.py) in front of it; many robots run per process on asyncio
(bench/_sim_fleet.py), --procs processes. Robots join by mDNS (--join mdns: announced on
127.0.0.1 under a service type of this run), by connecting out (--join connect: a WebSocket to
the primary's /x-vendor-connect through the robot's link, streams tunneled as
gateway/federation/tunnel.py does), or listed in the primary's peer_urls (--join static). The
primary is the real gateway (read cache on), unaware. With --sites S, S real site primaries
(aggregation.reexport) each take a share of the robots (they join their site), and the fleet
primary lists the sites, each behind an emulated WAN link of its own (--site-rtt-ms,
--site-rate-bps) at its own loopback address; the fleet primary starts once the robots have.

Once every robot is started it prints `primary: http://HOST:PORT pid PID`. With --hold-s it
keeps the fleet up that long and stops (no figures); otherwise it measures and prints a table
against the targets of issue 45:

- joined: every robot online on the gateway it joined, seconds after the robots started
  (target: all within 30 s);
- the idle primary's CPU and RSS per robot (targets 0.2 ms/s, 0.5 MiB);
- merged reads of /version-info and /functions/perception/data (every robot contributes):
  cached p50 (target 10 ms) and live p50/p99, a new X-Client-Id each time so every robot answers
  (targets RTT + 50 / RTT + 200 ms);
- a forwarded read of one robot's app;
- a fault raised on every robot (--fault-rate a second): delay from the robot's event time to
  its arrival on the primary's stream, p99 (target 300 ms), and events lost (target 0);
- a --partition-s partition of --partition-robots robots: all offline after, all online after
  the heal (targets 3 s each), events raised meanwhile lost (target 0);
- a recording downloaded through the primary (share of the link rate);
- the primary restarted: every robot back, seconds from its new process's start (target 30 s).

With --sites the figures are taken at the fleet primary (targets with the site link's RTT
added) and, beside them, at the site primaries, one level over their robots; the difference
is the cost of the extra level:

- joined: every robot online at its site, every site online at the fleet primary and every
  robot's app in its /apps, seconds after the fleet primary started;
- ids qualified through two levels (asserted; the run exits 1 when they are not): each robot's
  app once at the fleet primary as its site qualified it (`r7__lidar_sensor`, contributed by
  the site), no id qualified twice, and `x-vendor.peer_path` [site, robot] on its
  /version-info item and its relayed fault events;
- the idle fleet primary's and the site primaries' CPU and RSS, per robot and per site;
- merged reads and the forwarded read at the fleet primary and at site0;
- fault events: delay to the site's stream and to the fleet primary's, none lost on either;
- a partition of site0 from the fleet primary (--partition-s): site0 offline at the fleet
  primary after, online after the heal, faults raised meanwhile on its robots lost (0);
- the fleet primary restarted: every site back.

Usage: python bench/fleet_sim.py [--robots 100] [--rtt-ms 80] [--rate-bps 2000000] [--loss 0]
           [--join mdns|connect|static] [--sites 0] [--site-rtt-ms 20] [--site-rate-bps 0]
           [--procs N] [--hold-s 0] [--skip restart,...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import secrets
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

import bench._sim_measure as m  # noqa: E402
from bench._sim_robot import APP, robot_address  # noqa: E402
from tests.harness import Gateway  # noqa: E402

PORT = 8080  # a robot's link, where its primary reaches it
MEASURES = ("idle", "reads", "forward", "events", "partition", "download", "restart")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def split(n: int, parts: int) -> list[range]:
    """0..n-1 in `parts` contiguous ranges of nearly equal size (none empty)."""
    parts = max(1, min(parts, n))
    size, extra = divmod(n, parts)
    out, at = [], 0
    for k in range(parts):
        step = size + (k < extra)
        out.append(range(at, at + step))
        at += step
    return out


def site_domain(args: argparse.Namespace, site: int) -> int:
    """The ROS domain of site primary `site`: from --site-domains, else after the primary's."""
    listed = [int(d) for d in args.site_domains.split(",") if d.strip()]
    return listed[site] if listed else args.domain + 1 + site


def default_procs(robots: int, cores: int | None) -> int:
    """Simulator processes: one per 400 robots, at most one per core."""
    return max(1, min(max(1, cores or 1), math.ceil(robots / 400)))


def gateway_settings(name: str, join: str, robots: dict[str, str], service: str, key: str,
                     state: Path, sites: list[str] | None = None) -> list[str]:
    """A primary's settings over `robots` (name -> address); `sites`: the top's site URLs
    (name=url) when it stands over sites."""
    out = ["aggregation.enabled=true", "aggregation.cache.enabled=true",
           "aggregation.forward_timeout_ms=60000", f"aggregation.mdns_name={name}",
           "sse.max_clients=20", f"state_dir={state}"]
    if sites is not None:
        urls = [s.split("=", 1)[1] for s in sites]
        names = [s.split("=", 1)[0] for s in sites]
        return out + [f"aggregation.peer_urls=[{','.join(urls)}]",
                      f"aggregation.peer_names=[{','.join(names)}]"]
    n = len(robots)
    if join == "static":
        urls = [f"http://{address}:{PORT}" for address in robots.values()]
        out += [f"aggregation.peer_urls=[{','.join(urls)}]",
                f"aggregation.peer_names=[{','.join(robots)}]"]
    elif join == "mdns":
        out += ["aggregation.discover=true", "aggregation.mdns_interfaces=[127.0.0.1]",
                f"aggregation.mdns_service={service}",
                f"aggregation.max_discovered_peers={min(1000, max(50, n))}"]
    elif join == "connect":
        out += [f"aggregation.connect_token={key}",
                f"aggregation.max_connected_robots={max(1000, n)}"]
    else:
        raise ValueError(f"unknown join mode {join!r}")
    return out


class WorkerProc:
    """One simulator process and its control connection."""

    def __init__(self, proc: asyncio.subprocess.Process, control: str, names: list[str]) -> None:
        self.proc, self.control, self.names = proc, control, names
        self.lock = asyncio.Lock()
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def command(self, line: str) -> str:
        async with self.lock:
            if self.conn is None:
                self.conn = await asyncio.open_unix_connection(self.control)
            reader, writer = self.conn
            writer.write(line.encode() + b"\n")
            await writer.drain()
            return (await reader.readline()).decode().strip()


class Fleet:
    """The primary (and sites), the simulator processes, and how to reach each robot."""

    def __init__(self, args: argparse.Namespace, logs: Path) -> None:
        self.args, self.logs = args, logs
        self.names = [f"r{k}" for k in range(args.robots)]
        self.index = {n: args.address_base + k for k, n in enumerate(self.names)}
        self.key = secrets.token_hex(16)
        self.service = f"_dgs{secrets.token_hex(3)}._tcp.local."
        self.site_names = [f"site{s}" for s in range(args.sites)]
        self.site_of: dict[str, int] = {}
        for s, block in enumerate(split(len(self.names), max(1, args.sites))):
            for k in block:
                self.site_of[self.names[k]] = s
        # the address of site s's link, where the fleet primary reaches it
        self.site_index = {site: args.address_base + args.robots + s
                           for s, site in enumerate(self.site_names)}
        self.sites: list[Gateway] = []
        self.primary: Gateway | None = None
        self.workers: list[WorkerProc] = []
        self.worker_of: dict[str, WorkerProc] = {}
        self.problems: list[str] = []  # assertions the run found false

    def _gateway(self, name: str, domain: int, settings: list[str]) -> Gateway:
        return Gateway(free_port(), domain, settings, self.logs / f"{name}.log")

    async def start_gateways(self) -> None:
        """The site primaries (--sites), or the primary; with sites the fleet primary starts
        after the robots (start_top)."""
        a = self.args
        if not a.sites:
            await self.start_top()
            return
        for s, site in enumerate(self.site_names):
            robots = {n: robot_address(self.index[n]) for n in self.names
                      if self.site_of[n] == s}
            settings = gateway_settings(site, a.join, robots, self._service(s), self.key,
                                        self.logs / f"{site}-state")
            gw = self._gateway(site, site_domain(a, s), settings + ["aggregation.reexport=true"])
            self.sites.append(gw)
        await asyncio.gather(*(asyncio.to_thread(gw.start, 180) for gw in self.sites))

    async def start_top(self) -> None:
        a = self.args
        if a.sites:
            top = gateway_settings(
                "primary", a.join, {}, self.service, self.key, self.logs / "primary-state",
                [f"{n}=http://{robot_address(self.site_index[n])}:{PORT}"
                 for n in self.site_names])
        else:
            top = gateway_settings("primary", a.join,
                                   {n: robot_address(self.index[n]) for n in self.names},
                                   self.service, self.key,
                                   self.logs / "primary-state")
        self.primary = self._gateway("primary", a.domain, top)
        await asyncio.to_thread(self.primary.start, 180)

    def _service(self, site: int) -> str:
        return self.service if not self.args.sites else f"_dgs{site}{self.service[4:]}"

    def owner(self, name: str) -> Gateway:
        """The gateway a robot joins: its site, or the primary."""
        if self.args.sites:
            return self.sites[self.site_of[name]]
        assert self.primary is not None
        return self.primary

    def site_name_of(self) -> dict[str, str]:
        """robot -> the name of its site (--sites)."""
        return {n: self.site_names[s] for n, s in self.site_of.items()} if self.args.sites \
            else {}

    async def start_robots(self) -> None:
        a = self.args
        procs = a.procs or default_procs(len(self.names), os.cpu_count())
        for w, block in enumerate(split(len(self.names), procs)):
            names = [self.names[k] for k in block]
            control = str(self.logs / f"sim{w}.sock")
            robots = []
            for k in block:
                name = self.names[k]
                owner = self.owner(name)
                robots.append({"name": name, "index": self.index[name],
                               "primary": ["127.0.0.1", owner.port],
                               "service": self._service(self.site_of[name])})
            sites = [] if w else [{"name": n, "index": self.site_index[n],
                                   "target": ["127.0.0.1", g.port]}
                                  for n, g in zip(self.site_names, self.sites, strict=True)]
            spec = {"robots": robots, "join": a.join, "connect_key": self.key,
                    "rtt_ms": a.rtt_ms, "rate_bps": a.rate_bps, "loss": a.loss,
                    "rec_bytes": a.rec_bytes, "control": control,
                    "dial_spread_s": a.dial_spread_s, "sites": sites,
                    "site_rtt_ms": a.site_rtt_ms, "site_rate_bps": a.site_rate_bps}
            path = self.logs / f"sim{w}.json"
            path.write_text(json.dumps(spec))
            log = open(self.logs / f"sim{w}.log", "wb")  # noqa: SIM115 (lives with the process)
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(ROOT / "bench" / "_sim_fleet.py"), str(path),
                stdout=asyncio.subprocess.PIPE, stderr=log, cwd=ROOT)
            worker = WorkerProc(proc, control, names)
            self.workers.append(worker)
            for name in names + [site["name"] for site in sites]:
                self.worker_of[name] = worker
        for worker in self.workers:
            assert worker.proc.stdout is not None
            line = await worker.proc.stdout.readline()
            if not line.startswith(b"ready"):
                raise SystemExit(f"a simulator process failed; see {self.logs}")

    async def raise_fault(self, name: str, code: str) -> float:
        reply = await self.worker_of[name].command(f"raise {name} {code}")
        return float(reply.split()[1])

    async def partition(self, names: list[str], on: bool) -> None:
        by: dict[int, list[str]] = {}
        for name in names:
            by.setdefault(id(self.worker_of[name]), []).append(name)
        for group in by.values():
            await self.worker_of[group[0]].command(
                f"partition {'on' if on else 'off'} {' '.join(group)}")

    async def restart_primary(self) -> float:
        assert self.primary is not None
        await asyncio.to_thread(self.primary.stop)
        t0 = time.monotonic()
        await asyncio.to_thread(self.primary.start, 180)
        return time.monotonic() - t0

    async def close(self) -> None:
        for worker in self.workers:
            if worker.proc.returncode is None:
                worker.proc.terminate()
        for worker in self.workers:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(worker.proc.wait(), 10)
            if worker.proc.returncode is None:
                worker.proc.kill()
        for gw in [self.primary, *self.sites]:
            if gw is not None:
                await asyncio.to_thread(gw.stop)


async def measure(fleet: Fleet, session: aiohttp.ClientSession, t_start: float
                  ) -> list[m.Row]:
    a = fleet.args
    assert fleet.primary is not None
    top = m.Client(session, fleet.primary.base.removesuffix("/api/v1"))
    clients = {id(g): m.Client(session, g.base.removesuffix("/api/v1"))
               for g in [fleet.primary, *fleet.sites]}
    owners = {n: clients[id(fleet.owner(n))] for n in fleet.names}
    rows: list[m.Row] = []
    joined = await m.watch(owners, fleet.names, "online", max(60.0, 30 + 0.05 * a.robots),
                           t_start)
    times = sorted(joined.values())
    within = sum(t <= 30 for t in times)
    print(f"{len(joined)}/{a.robots} robots online, {within} within 30 s of the start; the "
          f"last after {m.fmt(max(times, default=float('nan')))} s (p50 "
          f"{m.fmt(m.pct(times, .5))} s)", flush=True)
    rows.append(("all joined within 30 s of the start (s to the last)", "<= 30",
                 f"{m.fmt(max(times, default=float('nan')))} ({len(joined)}/{a.robots})"))
    skip = set(a.skip.split(",")) if a.skip else set()
    if "idle" not in skip:
        await asyncio.sleep(a.settle_s)
        rows += await m.measure_idle(fleet.primary.proc.pid if fleet.primary.proc else 0,
                                     a.robots, a.idle_s, [w.proc.pid for w in fleet.workers])
    if "reads" not in skip:
        rows += await m.measure_reads(top, a.reads, a.rtt_ms,
                                      pid=fleet.primary.proc.pid if fleet.primary.proc else 0)
    apps = (await top.get("/apps"))[2]
    recorder = fleet.names[-1]
    app = m.app_of(apps, recorder)
    if "forward" not in skip and app:
        rows += await m.measure_forward(top, app, 20, a.rtt_ms)
    events = m.Events(session, top.base)
    try:
        await asyncio.sleep(3.0)  # the relays open once a client holds the stream
        if "events" not in skip:
            rows += await m.measure_events(events, fleet.names, fleet.raise_fault, a.fault_rate)
            if fleet.primary.proc:
                rows += m.connections_row("with a stream client", fleet.primary.proc.pid,
                                          a.robots)
        if "partition" not in skip:
            cut = fleet.names[:min(a.partition_robots, len(fleet.names) - 1 or 1)]
            rows += await m.measure_partition(owners, events, cut, fleet.partition,
                                              fleet.raise_fault, a.partition_s)
    finally:
        events.close()
    if "download" not in skip and app:
        rows += await m.measure_download(top, app, a.rate_bps)
    if "restart" not in skip:
        direct = fleet.site_names if a.sites else fleet.names
        rows += await m.measure_restart(fleet.restart_primary, {n: top for n in direct},
                                        direct, max(60.0, 30 + 0.05 * a.robots))
    return rows


async def measure_sites(fleet: Fleet, session: aiohttp.ClientSession, t_start: float,
                        t_top: float) -> list[m.Row]:
    """The figures over sites: at the fleet primary, and beside them at the sites (one level);
    the ids through two levels (fleet.problems gets what is wrong)."""
    a = fleet.args
    assert fleet.primary is not None and fleet.primary.proc is not None
    top = m.Client(session, fleet.primary.base.removesuffix("/api/v1"))
    site_clients = {n: m.Client(session, g.base.removesuffix("/api/v1"))
                    for n, g in zip(fleet.site_names, fleet.sites, strict=True)}
    site_of = fleet.site_name_of()
    owners = {n: site_clients[site_of[n]] for n in fleet.names}
    rows: list[m.Row] = []
    budget = max(60.0, 30 + 0.05 * a.robots)
    joined = await m.watch(owners, fleet.names, "online", budget, t_start)
    times = sorted(joined.values())
    print(f"{len(joined)}/{a.robots} robots online at their sites, the last after "
          f"{m.fmt(max(times, default=float('nan')))} s", flush=True)
    at_top = await m.watch({n: top for n in fleet.site_names}, fleet.site_names, "online",
                           budget, t_top)
    want = {f"{r}__{APP}" for r in fleet.names}

    async def all_apps() -> bool:
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            _, status, body = await top.get("/apps")
            return status == 200 and want <= {i["id"] for i in json.loads(body)["items"]}
        return False
    await m.wait_for(all_apps, budget)
    apps_s = time.monotonic() - t_top
    sites_s = max(at_top.values(), default=float("nan"))
    print(f"{len(at_top)}/{a.sites} sites online at the fleet primary after {m.fmt(sites_s)} s"
          f"; every robot's app there after {apps_s:.1f} s (from its start)", flush=True)
    rows += [("robots online at their sites (s to the last)", "<= 30",
              f"{m.fmt(max(times, default=float('nan')))} ({len(joined)}/{a.robots})"),
             ("sites online at the fleet primary; every robot's app there (s from its start)",
              "<= 30", f"{m.fmt(sites_s)} ({len(at_top)}/{a.sites}); {apps_s:.1f}")]
    apps = (await top.get("/apps"))[2]
    problems = m.check_ids(apps, site_of)
    _, _, versions = await top.get("/version-info")
    problems += m.check_paths(json.loads(versions)["items"], site_of, "/version-info")
    fleet.problems += problems
    for p in problems[:10]:
        print(f"ids: {p}", flush=True)
    rows.append(("ids qualified through two levels (apps, /version-info paths)", "all",
                 "all" if not problems else f"{len(problems)} problems"))
    skip = set(a.skip.split(",")) if a.skip else set()
    site0, site0_client = fleet.site_names[0], site_clients[fleet.site_names[0]]
    in_site0 = [n for n in fleet.names if site_of[n] == site0]
    one = f"at {site0} ({len(in_site0)} robots, one level): "
    rtt2 = a.rtt_ms + a.site_rtt_ms
    if "idle" not in skip:
        await asyncio.sleep(a.settle_s)
        rows += await m.measure_idle(fleet.primary.proc.pid, a.robots, a.idle_s,
                                     [w.proc.pid for w in fleet.workers],
                                     [g.proc.pid for g in fleet.sites if g.proc])
    if "reads" not in skip:
        at_top_f: dict[str, tuple[float, float, float]] = {}
        at_site: dict[str, tuple[float, float, float]] = {}
        site_pids = [g.proc.pid for g in fleet.sites if g.proc]
        rows += await m.measure_reads(top, a.reads, rtt2, figures=at_top_f,
                                      pid=fleet.primary.proc.pid, below=site_pids)
        rows += await m.measure_reads(site0_client, a.reads, a.rtt_ms, one, at_site,
                                      pid=site_pids[0])
        for path in at_top_f:
            rows += [m.extra_row(f"cached merged {path} p50", at_top_f[path][0],
                                 at_site[path][0], digits=2),
                     m.extra_row(f"live merged {path} p50", at_top_f[path][1],
                                 at_site[path][1])]
    recorder = fleet.names[-1]
    app = m.app_of(apps, recorder, site_of[recorder])
    if "forward" not in skip and app:
        f_top: dict[str, float] = {}
        f_site: dict[str, float] = {}
        rows += await m.measure_forward(top, app, 20, rtt2, figures=f_top)
        site_apps = (await site_clients[site_of[recorder]].get("/apps"))[2]
        site_app = m.app_of(site_apps, recorder)
        if site_app:
            rows += await m.measure_forward(site_clients[site_of[recorder]], site_app, 20,
                                            a.rtt_ms, f"at {site_of[recorder]}: ", f_site)
            rows.append(m.extra_row("forwarded read p50", f_top["p50"], f_site["p50"]))
    events = m.Events(session, top.base)
    below = {n: m.Events(session, c.base) for n, c in site_clients.items()}
    try:
        await asyncio.sleep(3.0)  # the relays open once a client holds the stream
        if "events" not in skip:
            rows += await m.measure_events(events, fleet.names, fleet.raise_fault,
                                           a.fault_rate, below, site_of)
            relayed = [d for _, d in events.items
                       if str((d.get("fault") or {}).get("fault_code", "")).startswith("SIM_")]
            path_problems = m.check_paths(relayed, site_of, "relayed fault events")
            fleet.problems += path_problems
            for p in path_problems[:10]:
                print(f"ids: {p}", flush=True)
            rows.append(("peer_path [site, robot] on relayed events", "all",
                         "all" if not path_problems else f"{len(path_problems)} problems"))
            rows += m.connections_row("with a stream client", fleet.primary.proc.pid,
                                      a.robots, [g.proc.pid for g in fleet.sites if g.proc])
        if "partition" not in skip:
            rows += await m.measure_partition(
                {site0: top}, events, [site0], fleet.partition, fleet.raise_fault,
                a.partition_s, in_site0[:a.partition_robots],
                f"{site0} ({len(in_site0)} robots) from the fleet primary")
    finally:
        events.close()
        for stream in below.values():
            stream.close()
    if "download" not in skip and app:
        rows += await m.measure_download(top, app, a.rate_bps)
    if "restart" not in skip:
        rows += await m.measure_restart(fleet.restart_primary,
                                        {n: top for n in fleet.site_names},
                                        fleet.site_names, budget, "sites")
    return rows


async def run(args: argparse.Namespace) -> None:
    logs = Path(tempfile.mkdtemp(prefix="fleet-sim-"))
    print(f"{args.robots} simulated robots at {args.rtt_ms:.0f} ms RTT, "
          f"{args.rate_bps / 1e6:g} Mbit/s, loss {args.loss:g}, joining by {args.join}"
          f"{f' under {args.sites} sites' if args.sites else ''}; logs in {logs}", flush=True)
    fleet = Fleet(args, logs)
    try:
        await fleet.start_gateways()
        t_start = time.monotonic()
        await fleet.start_robots()
        print(f"robots started in {time.monotonic() - t_start:.1f} s", flush=True)
        t_top = time.monotonic()
        if args.sites:
            await fleet.start_top()
        assert fleet.primary is not None and fleet.primary.proc is not None
        print(f"primary: http://127.0.0.1:{fleet.primary.port} pid {fleet.primary.proc.pid}",
              flush=True)
        if args.hold_s > 0:
            await asyncio.sleep(args.hold_s)
            return
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            if args.sites:
                rows = await measure_sites(fleet, session, t_start, t_top)
            else:
                rows = await measure(fleet, session, t_start)
        sites = (f", {args.sites} sites of {args.robots // args.sites} (site link RTT "
                 f"{args.site_rtt_ms:.0f} ms)" if args.sites else "")
        print(m.table(rows, f"{args.robots} simulated robots, RTT {args.rtt_ms:.0f} ms, "
                            f"{args.rate_bps / 1e6:g} Mbit/s, join {args.join}{sites}"),
              flush=True)
        for p in fleet.problems:
            print(f"FAILED: {p}", flush=True)
        if fleet.problems:
            raise SystemExit(1)
    finally:
        print("tearing down", flush=True)
        await asyncio.shield(fleet.close())


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", type=int, default=100)
    ap.add_argument("--rtt-ms", type=float, default=80.0)
    ap.add_argument("--rate-bps", type=float, default=2_000_000)
    ap.add_argument("--loss", type=float, default=0.0,
                    help="share of chunks lost on each link (resent one RTO later)")
    ap.add_argument("--join", choices=("mdns", "connect", "static"), default="mdns")
    ap.add_argument("--sites", type=int, default=0,
                    help="site primaries under a fleet primary, each over robots/sites")
    ap.add_argument("--site-rtt-ms", type=float, default=20.0,
                    help="RTT of the link between the fleet primary and each site")
    ap.add_argument("--site-rate-bps", type=float, default=0.0,
                    help="rate of each site's link (0: uncapped)")
    ap.add_argument("--hold-s", type=float, default=0.0,
                    help="keep the fleet up this long, then stop (no figures)")
    ap.add_argument("--procs", type=int, default=0, help="simulator processes (0: one per "
                    "400 robots, at most one per core)")
    ap.add_argument("--address-base", type=int, default=0,
                    help="robot k listens at the loopback address of index base + k "
                         "(two fleets on one host stay apart)")
    ap.add_argument("--domain", type=int, default=180, help="ROS domain of the primary "
                    "(sites: the next ones)")
    ap.add_argument("--site-domains", default="", help="ROS domains of the site primaries, "
                    "comma-separated (default: the ones after --domain)")
    ap.add_argument("--reads", type=int, default=100)
    ap.add_argument("--settle-s", type=float, default=10.0)
    ap.add_argument("--idle-s", type=float, default=20.0)
    ap.add_argument("--fault-rate", type=float, default=50.0, help="faults raised a second")
    ap.add_argument("--partition-s", type=float, default=30.0)
    ap.add_argument("--partition-robots", type=int, default=100)
    ap.add_argument("--rec-bytes", type=int, default=250_000)
    ap.add_argument("--dial-spread-s", type=float, default=0.0,
                    help="connect-out robots dial within this many seconds of their start")
    ap.add_argument("--skip", default="", help=f"figures not measured: {','.join(MEASURES)}")
    args = ap.parse_args(argv)
    if args.sites and args.robots < 2 * args.sites:
        ap.error("--sites needs at least two robots per site (their apps collide there, so "
                 "each site qualifies them)")
    if args.site_domains and len(args.site_domains.split(",")) != args.sites:
        ap.error("--site-domains needs one domain per site")
    return args


async def _main(args: argparse.Namespace) -> None:
    task = asyncio.current_task()
    assert task is not None
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, task.cancel)
    await run(args)


def main() -> None:
    args = parse()
    loop_factory = None
    with contextlib.suppress(ImportError):
        import uvloop  # noqa: PLC0415 - optional: asyncio's loop without it
        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner, \
            contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
        runner.run(_main(args))


if __name__ == "__main__":
    main()
