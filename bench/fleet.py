"""A fleet at scale and distance: N robots in the lab behind slow links, one primary.

Each robot is a namespaced host (tests/fleet/lab.py; root) on ROS domain 0 with one demo node
(lidar_sensor; --nodes 2 adds temp_sensor) in its light mode (scans at 1 Hz, one executor
thread; --full-nodes: 5 Hz and four threads), its gateway and a link emulator (--rtt-ms,
--rate-bps; the robots' links are served by link hubs, one process per core by default
(--link-hubs), each link's sockets in its robot's namespace; --link-per-robot: a process per
robot); it announces itself by mDNS; the primary (read cache on) discovers them. Only
one robot records rosbags (the one the download is measured on). Robots start --window at a
time (a robot counts as started until its gateway answers through its link), so a large
fleet builds without starving the machine; a progress line every few seconds shows it going.
Printed against the issue's targets, with the local baseline of the same run:

- join: each robot online on the primary after its own gateway answered (target <= 10 s);
- cached merged read of /version-info (one item per gateway) at the primary against the same read
  answered locally there (X-Vendor-No-Fan-Out) (target <= 2x), p50 over --reads;
- live merged read p50: a cache miss at the primary (a new X-Client-Id; every robot answers
  the same read again) (target <= RTT + 20 ms); also with a new query string each time, which
  every robot answers through its generic path (no target);
- fault events: a fault cleared through the primary on each robot; delay from the event's
  own timestamp to its arrival on the primary's stream, p50/p99 (target p99 <= RTT + 100 ms);
- partitions of --partition-s on a few robots: offline after, online after heal, events
  raised meanwhile received (targets 3 s, 3 s, zero lost);
- an address change followed (target <= 5 s);
- a recording downloaded through the primary over one capped link, in % of the link rate
  (target >= 90%), resumed by Range, while merged reads go on (their p50 during the download);
- the primary's RSS and CPU per robot, and the idle fleet's CPU by process kind (gateways,
  demo nodes, link emulators, primary; after --settle-s, over --idle-s); the machine's CPU
  use and load with each figure.

The kernel's ARP table limits and input backlog are raised while a lab of more than 10 hosts
runs (restored after; tests/fleet/lab.py): the kernel keeps one of each for all the lab's
hosts; past the ARP table's default 1024 entries (33 hosts) robots' multicast sends, their
mDNS announcements, were dropped, and the default backlog dropped packets of fan-out reads.
Each figure line counts packets the kernel's input backlog dropped meanwhile, if any.

Everything (processes, namespaces) is torn down at the end, on failure and on Ctrl-C/SIGTERM.

Usage: python bench/fleet.py [--robots 20] [--rtt-ms 80] [--rate-bps 2000000] [--nodes 1]
                             [--window 8] [--settle-s 0] [--idle-s 10] [--idle-only]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fleet.lab import (  # noqa: E402
    LAN_PORT,
    Lab,
    LabRobot,
    gateway_argv,
    host_env,
    lab_unusable,
    on_host,
    request,
    wait_until,
)

FAULT = "LIDAR_RANGE_INVALID"
RECORDER = ["snapshots.rosbag.enabled=true", "snapshots.rosbag.topic_selection=all",
            "snapshots.rosbag.duration_sec=30", "snapshots.rosbag.max_bag_size_mb=4"]

LIGHT = ["snapshots.enabled=false", "faults.rosout_bridge.enabled=false"]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def cpu_rss(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS bytes) of a process from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), rss


class Client:
    """One keep-alive connection to the primary."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.conn = http.client.HTTPConnection(address, LAN_PORT, timeout=30)

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[float, int, bytes]:
        t0 = time.perf_counter()
        try:
            self.conn.request("GET", "/api/v1" + path, headers=headers or {})
            resp = self.conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection(self.address, LAN_PORT, timeout=30)
            raise
        return time.perf_counter() - t0, resp.status, body


class Events:
    """The primary's /faults/stream, read in a thread: (arrival, data) kept."""

    def __init__(self, address: str) -> None:
        self.conn = http.client.HTTPConnection(address, LAN_PORT, timeout=600)
        self.conn.request("GET", "/api/v1/faults/stream")
        self.resp = self.conn.getresponse()
        self.items: list[tuple[float, dict[str, Any]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for raw in self.resp.fp:
                if raw.startswith(b"data: "):
                    self.items.append((time.time(), json.loads(raw[6:])))
        except (OSError, ValueError):
            pass


def event_time(data: dict[str, Any]) -> float | None:
    """The event's own time (seconds since the epoch), when it carries one."""
    for key in ("timestamp", "event_time"):
        value = data.get(key)
        if isinstance(value, int):
            return value / 1e9
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return None
    return None


class Machine:
    """The whole machine's CPU use (of all cores) and load between two marks."""

    def __init__(self) -> None:
        self.mark()

    @staticmethod
    def _stat() -> tuple[int, int]:
        cols = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = cols[3] + cols[4]
        return sum(cols) - idle, sum(cols)

    def mark(self) -> None:
        self.busy, self.total = self._stat()
        self.drops = backlog_drops()

    def since(self) -> str:
        """'CPU x% busy of N cores, load a/b/c' since the last mark, and packets the
        kernel dropped from its input backlog if any."""
        busy, total = self._stat()
        share = (busy - self.busy) / max(1, total - self.total)
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        drops = backlog_drops() - self.drops
        lost = f", {drops} packets dropped by the kernel's input backlog" if drops else ""
        return f"machine {share:.0%} busy of {os.cpu_count()} cores, load {load}{lost}"


def backlog_drops() -> int:
    """Packets the kernel dropped from its per-CPU input backlogs since boot (all CPUs)."""
    try:
        lines = Path("/proc/net/softnet_stat").read_text().splitlines()
        return sum(int(line.split()[1], 16) for line in lines)
    except (OSError, IndexError, ValueError):
        return 0


def memory_used_gib() -> float:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    kib = int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])
    return kib / 2**20


class Build:
    """Robots started --window at a time; each one's ready and online times."""

    def __init__(self, lab: Lab, names: list[str], args: argparse.Namespace, logs: Path,
                 base: str, recorder: str) -> None:
        self.lab, self.names, self.args, self.logs, self.base = lab, names, args, logs, base
        self.recorder = recorder
        self.nodes = ("lidar_sensor",) if args.nodes == 1 else ("temp_sensor", "lidar_sensor")
        self.robots: dict[str, LabRobot] = {}
        self.started: dict[str, float] = {}
        self.ready: dict[str, float] = {}
        self.online: dict[str, float] = {}
        self.failed: dict[str, str] = {}
        self.probes: dict[str, Future[float | None]] = {}
        self.pool = ThreadPoolExecutor(max(4, args.window + 2), thread_name_prefix="probe")

    def start(self, name: str) -> None:
        settings = ["aggregation.announce=true", "aggregation.mdns_interfaces=[all]",
                    f"aggregation.mdns_name={name}"]
        if name == self.recorder:
            settings += RECORDER
        else:  # light: no freeze frames, no /rosout subscription (faults come by service)
            settings += LIGHT
        self.robots[name] = LabRobot(self.lab[name], self.logs).start(
            settings, nodes=self.nodes, rtt_ms=self.args.rtt_ms, rate_bps=self.args.rate_bps,
            light_nodes=not self.args.full_nodes and name != self.recorder,
            hub=self.lab.hub_for(len(self.robots)))
        self.started[name] = time.monotonic()

    def probe(self, name: str) -> float | None:
        """The time the robot's gateway first answered /health through its link, or None."""
        try:
            if request("GET", f"{self.robots[name].url}/api/v1/health",
                       timeout=self.args.probe_s)[0] == 200:
                return time.monotonic()
        except OSError:
            pass
        time.sleep(0.2)
        return None

    def starting(self) -> list[str]:
        return [n for n in self.started if n not in self.ready and n not in self.failed]

    def poll_probes(self) -> None:
        for name in self.starting():
            fut = self.probes.get(name)
            if fut is not None and fut.done():
                del self.probes[name]
                t = fut.result()
                if t is not None:
                    self.ready[name] = t
                    continue
            gw = self.robots[name].gateway
            if gw is not None and gw.poll() is not None:
                self.failed[name] = f"gateway exited with {gw.returncode}"
            elif time.monotonic() - self.started[name] > self.args.ready_timeout_s:
                self.failed[name] = f"not ready after {self.args.ready_timeout_s:.0f} s"
            elif name not in self.probes:
                self.probes[name] = self.pool.submit(self.probe, name)

    def poll_primary(self) -> None:
        try:
            peers = json.loads(request("GET", self.base + "/api/v1/health",
                                       timeout=30)[2])["peers"]
        except (OSError, ValueError, KeyError):
            return
        now = time.monotonic()
        for p in peers:
            if p.get("status") == "online" and p.get("name") not in self.online:
                self.online[p["name"]] = now

    def run(self) -> None:
        """Start every robot; return when each is online, failed, or the budget is spent."""
        t0 = last = time.monotonic()
        todo = list(self.names)
        machine = Machine()
        grace = max(30.0, 0.5 * len(self.names))  # after the last robot is ready
        while True:
            while todo and len(self.starting()) < self.args.window:
                self.start(todo.pop(0))
            self.poll_probes()
            self.poll_primary()
            now = time.monotonic()
            waiting = [n for n in self.ready if n not in self.online]
            if not todo and not self.starting():
                if not waiting or now - max(self.ready.values(), default=t0) > grace:
                    break
            if now - last >= self.args.progress_s:
                last = now
                print(f"[{now - t0:5.0f} s] started {len(self.started)}/{len(self.names)}, "
                      f"ready {len(self.ready)}, online on the primary {len(self.online)}, "
                      f"failed {len(self.failed)}; {machine.since()}, memory used "
                      f"{memory_used_gib():.1f} GiB", flush=True)
                machine.mark()
            time.sleep(0.1)
        for name, why in self.failed.items():
            print(f"robot {name} failed: {why} (logs in {self.logs})", flush=True)
        self.took = time.monotonic() - t0

    def joins(self) -> list[float]:
        """Seconds from each robot's ready time to its first sighting online (0 when the
        primary had it online before the bench's own probe saw it answer)."""
        return [max(0.0, self.online[n] - self.ready[n]) for n in self.ready if n in self.online]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def _terminate(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def measure_idle(primary_pid: int, robots: dict[str, LabRobot], n: int,
                 seconds: float = 10.0, hubs: list[int] | None = None
                 ) -> tuple[dict[str, list[int]], dict[str, float]]:
    """The primary's CPU and RSS per robot, and the CPU of each kind of robot process
    (gateway, demo nodes, link emulator) over `seconds` of an idle fleet."""
    machine = Machine()
    kinds: dict[str, list[int]] = {"gateway": [], "demo node": [], "link emulator": []}
    for r in robots.values():
        for proc in r.host.procs:
            if proc.poll() is not None:
                continue
            kind = ("gateway" if proc is r.gateway else "link emulator" if proc is r.link
                    else "demo node")
            kinds[kind].append(proc.pid)
    kinds["link emulator"] += hubs or []  # link hubs: each serves many robots' links

    def cpu(pids: list[int]) -> float:
        total = 0.0
        for pid in pids:
            try:
                total += cpu_rss(pid)[0]
            except (OSError, IndexError):
                pass
        return total
    cpu0, _ = cpu_rss(primary_pid)
    before = {k: cpu(v) for k, v in kinds.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    dt = time.monotonic() - t0
    cpu1, rss = cpu_rss(primary_pid)
    rates = {k: (cpu(v) - before[k]) / dt * 1e3 for k, v in kinds.items()}
    primary = (cpu1 - cpu0) / dt * 1e3
    print(f"primary idle: {primary / n:.2f} ms/s CPU and "
          f"{rss / n / 2**20:.2f} MiB RSS per robot ({primary:.0f} ms/s, "
          f"{rss / 2**20:.0f} MiB in all); {machine.since()}", flush=True)
    total = primary + sum(rates.values())
    split = "; ".join(f"{k}s {rates[k]:.0f} ms/s ({rates[k] / n:.1f} per robot, "
                      f"{rates[k] / max(total, 1e-9):.0%})" for k, v in kinds.items())
    print(f"idle fleet CPU by process kind: {split}; primary {primary:.0f} ms/s "
          f"({primary / max(total, 1e-9):.0%}); {total:.0f} ms/s in all", flush=True)
    return {**kinds, "primary": [primary_pid]}, {**rates, "primary": primary}


def measure_reads(client: Client, reads: int, n: int, rtt: float) -> None:
    path = "/version-info"  # merged over every robot; cached; X-Vendor-No-Fan-Out: local
    items: list[int] = []

    def complete() -> bool:
        items.append(len(json.loads(client.get(path)[2]).get("items", [])))
        return items[-1] > n
    try:
        wait_until(complete, 60 + n, "every robot in the merged read")
    except AssertionError:
        print(f"the merged read held {max(items, default=0)} of {n + 1} items at best within "
              f"{60 + n} s (peers timing out); measuring anyway", flush=True)
    machine = Machine()
    local, cached, live, unique = [], [], [], []
    for k in range(reads):
        local.append(client.get(path, {"X-Vendor-No-Fan-Out": "1"})[0])
        cached.append(client.get(path)[0])
        if k % 4 == 0:
            # a client id the primary has not cached (part of its cache key; passed on):
            # every robot answers the same read again, as for an expired cache entry
            live.append(client.get(path, {"X-Client-Id": f"live-{k}"})[0])
        elif k % 4 == 2:
            # a query never asked before: every robot answers it through its generic path
            unique.append(client.get(f"{path}?live={k}")[0])
    lp, cp, vp = pct(local, .5) * 1e3, pct(cached, .5) * 1e3, pct(live, .5) * 1e3
    print(f"local read p50 {lp:.2f} ms; cached merged p50 {cp:.2f} ms, ratio "
          f"{cp / lp:.2f} (target <= 2); live merged p50 {vp:.1f} ms, p99 "
          f"{pct(live, .99) * 1e3:.1f} ms (target p50 <= {rtt + 20:.0f} ms); live merged "
          f"with a new query p50 {pct(unique, .5) * 1e3:.1f} ms, p99 "
          f"{pct(unique, .99) * 1e3:.1f} ms; {machine.since()}", flush=True)


def threads_s(pid: int) -> float:
    """CPU seconds of a process's live threads, from schedstat (ns; finer than /proc/stat)."""
    total = 0.0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0.0
    for tid in tasks:
        try:
            total += int((tid / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue  # the thread ended
    return total


def measure_live_cost(client: Client, kinds: dict[str, list[int]], idle: dict[str, float],
                      reads: int = 40) -> None:
    """The fleet's CPU (every robot process and the primary) per live merged read, above
    the idle rate, in all and by process kind: on 2 shared cores it bounds the live read's
    wall time from below. Both kinds of live read: a new client id (robots answer a read
    they answered before) and a new query (robots answer through their generic path)."""
    cores = os.cpu_count() or 1
    for what, call in (
            ("live merged read", lambda k: client.get("/version-info",
                                                      {"X-Client-Id": f"cost-{k}"})),
            ("live merged read with a new query", lambda k: client.get(
                f"/version-info?cost={k}"))):
        machine = Machine()
        before = {k: sum(threads_s(p) for p in pids) for k, pids in kinds.items()}
        t0 = time.monotonic()
        took = [call(k)[0] for k in range(reads)]
        dt = time.monotonic() - t0
        spent = {k: (sum(threads_s(p) for p in pids) - before[k] - idle.get(k, 0.0) / 1e3 * dt)
                 / reads * 1e3 for k, pids in kinds.items()}
        total = sum(spent.values())
        split = "; ".join(f"{k} {v:.1f} ms" for k, v in spent.items())
        print(f"fleet CPU per {what}: {total:.0f} ms above idle (at least "
              f"{total / cores:.0f} ms of wall time on {cores} cores; {split}); these "
              f"{reads} reads back to back p50 {pct(took, .5) * 1e3:.1f} ms; {machine.since()}",
              flush=True)


def measure_events(client: Client, events: Events, base: str, rtt: float
                   ) -> dict[str, dict[str, Any]]:
    """Clear the fault on every robot through the primary; the lidar apps by id."""
    apps = {a["id"]: a for a in json.loads(client.get("/apps")[2])["items"]
            if a["id"].endswith("lidar_sensor")}
    machine = Machine()
    delays: list[float] = []
    for app in apps:
        seen = len(events.items)
        status, _, _ = request("DELETE", f"{base}/api/v1/apps/{app}/faults/{FAULT}", timeout=30)
        if status != 204:
            continue
        peer = apps[app]["x-vendor"]["contributors"][0]
        try:
            hit = wait_until(lambda seen=seen, peer=peer: [
                (t, d) for t, d in events.items[seen:]
                if d.get("x-vendor", {}).get("peer") == peer], 10, "event")
        except AssertionError:
            continue
        t, d = hit[0]
        own = event_time(d)
        if own is not None:
            delays.append(t - own)
    print(f"fault events relayed: {len(delays)}/{len(apps)}; delay p50 "
          f"{pct(delays, .5) * 1e3:.0f} ms, p99 {pct(delays, .99) * 1e3:.0f} ms "
          f"(target p99 <= {rtt + 100:.0f} ms); {machine.since()}", flush=True)
    return apps


def watch(client: Client, names: list[str], status: str, budget: float) -> dict[str, float]:
    """Seconds until each named peer shows `status` on the primary."""
    t0 = time.monotonic()
    out: dict[str, float] = {}
    while len(out) < len(names) and time.monotonic() - t0 < budget:
        peers = {p["name"]: p for p in json.loads(client.get("/health")[2])["peers"]}
        for name in names:
            if name not in out and peers.get(name, {}).get("status") == status:
                out[name] = time.monotonic() - t0
        time.sleep(0.05)
    return out


def measure_partitions(client: Client, events: Events, robots: dict[str, LabRobot],
                       cut: list[str], partition_s: float) -> None:
    for name in cut:
        robots[name].link_command("partition on")
    t0 = time.monotonic()
    off = watch(client, cut, "offline", 30)
    seen = len(events.items)
    for name in cut:  # an event raised behind the partition
        on_host(robots[name].host, "DELETE", 8081, f"/apps/lidar_sensor/faults/{FAULT}")
    time.sleep(max(0.0, partition_s - (time.monotonic() - t0)))
    for name in cut:
        robots[name].link_command("partition off")
    back = watch(client, cut, "online", 30)
    got: set[str] = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not set(cut) <= got:
        got = {d.get("x-vendor", {}).get("peer") for _, d in events.items[seen:]}
        time.sleep(0.1)
    lost = [n for n in cut if n not in got]
    print(f"{partition_s:.0f} s partition of {len(cut)} robots: offline after "
          f"{max(off.values(), default=float('nan')):.2f} s ({len(off)}/{len(cut)}), online "
          f"{max(back.values(), default=float('nan')):.2f} s after heal ({len(back)}/"
          f"{len(cut)}) (targets 3 s); events lost: {len(lost)} {lost}", flush=True)


def measure_move(client: Client, lab: Lab, mover: LabRobot) -> None:
    new = lab.free_address()
    lab.move(mover.host, new)
    t0 = time.monotonic()
    try:
        wait_until(lambda: any(p["name"] == mover.host.name and p["status"] == "online"
                               and new in p["url"] for p in json.loads(
                                   client.get("/health")[2])["peers"]), 30, "the move",
                   every=0.05)
        print(f"address change followed after {time.monotonic() - t0:.2f} s "
              "(target <= 5 s)", flush=True)
    except AssertionError:
        print("address change not followed within 30 s", flush=True)


def measure_download(client: Client, address: str, base: str, app: str | None,
                     rate_bps: float) -> None:
    recs = (json.loads(client.get(f"/apps/{app}/bulk-data/rosbags")[2]).get("items", [])
            if app else [])
    if not recs:
        print(f"no recording to download ({app})", flush=True)
        return
    rec = max(recs, key=lambda r: r["size"])
    url = f"{base}/api/v1/apps/{app}/bulk-data/rosbags/{rec['id']}"
    client.get("/version-info")  # the merged read cached again (the move changed the table)
    during: list[float] = []
    stop = threading.Event()

    def reads() -> None:
        c = Client(address)
        while not stop.is_set():
            during.append(c.get("/version-info")[0])
            time.sleep(0.05)
    th = threading.Thread(target=reads)
    th.start()
    machine = Machine()
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(address, LAN_PORT, timeout=600)
    try:
        conn.request("GET", url.split(str(LAN_PORT), 1)[1])
        resp = conn.getresponse()
        first = time.monotonic() - t0
        status, body = resp.status, resp.read()
    finally:
        took = time.monotonic() - t0
        conn.close()
        stop.set()
        th.join()
    share = len(body) * 8 / rate_bps / took
    half = len(body) // 2
    rstatus, _, rest = request("GET", url, headers={"Range": f"bytes={half}-"}, timeout=600)
    resumed = "identical" if rest == body[half:] else f"different ({len(rest)} bytes)"
    print(f"recording {len(body)} bytes (status {status}) through the primary in "
          f"{took:.2f} s: {share:.0%} of the link (target >= 90%; headers after "
          f"{first * 1e3:.0f} ms); resumed from byte {half}: "
          f"status {rstatus}, {resumed}; merged reads meanwhile p50 "
          f"{pct(during, .5) * 1e3:.2f} ms, p99 {pct(during, .99) * 1e3:.2f} ms "
          f"({len(during)} reads); {machine.since()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", type=int, default=20)
    ap.add_argument("--rtt-ms", type=float, default=80.0)
    ap.add_argument("--rate-bps", type=float, default=2_000_000)
    ap.add_argument("--nodes", type=int, default=1, choices=(1, 2))
    ap.add_argument("--window", type=int, default=8,
                    help="robots starting at once (started, gateway not answering yet)")
    ap.add_argument("--reads", type=int, default=200)
    ap.add_argument("--partition-s", type=float, default=30.0)
    ap.add_argument("--progress-s", type=float, default=5.0)
    ap.add_argument("--full-nodes", action="store_true",
                    help="demo nodes at their full rate (default: their light mode)")
    ap.add_argument("--settle-s", type=float, default=0.0,
                    help="wait this long after the build before the idle figures")
    ap.add_argument("--idle-s", type=float, default=10.0,
                    help="how long the idle fleet's CPU is measured")
    ap.add_argument("--idle-only", action="store_true",
                    help="stop after the join and idle figures (a quick CPU split)")
    ap.add_argument("--probe-s", type=float, default=5.0,
                    help="budget of one readiness probe of a robot")
    ap.add_argument("--link-hubs", type=int, default=os.cpu_count() or 1,
                    help="link hub processes, robots spread over them (default: one per core)")
    ap.add_argument("--link-per-robot", action="store_true",
                    help="a link emulator process per robot (default: one process, the "
                         "link hub, serving every robot's link from inside its namespace)")
    ap.add_argument("--ready-timeout-s", type=float, default=180.0,
                    help="a robot whose gateway has not answered after this counts as failed")
    args = ap.parse_args()
    why = lab_unusable()
    if why:
        sys.exit(f"cannot run the lab: {why}")
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    rtt = args.rtt_ms
    logs = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    names = [f"r{k}" for k in range(args.robots)]
    recorder = names[-2] if len(names) > 2 else names[0]
    print(f"{args.robots} robots at {rtt:.0f} ms RTT, {args.rate_bps / 1e6:g} Mbit/s; "
          f"logs in {logs}", flush=True)
    build: Build | None = None
    t_lab = time.monotonic()
    try:
        with Lab(["primary", *names]) as lab:
            if lab.kernel_limits is not None:
                print(f"kernel network limits (ARP table, input backlog) raised for the lab "
                      f"from {lab.kernel_limits} (restored at the end)", flush=True)
            ph = lab["primary"]
            primary = ph.run(gateway_argv("0.0.0.0", LAN_PORT, [
                "aggregation.enabled=true", "aggregation.discover=true",
                "aggregation.mdns_interfaces=[all]", "aggregation.mdns_name=primary",
                f"aggregation.max_discovered_peers={max(50, 2 * args.robots)}",
                "aggregation.cache.enabled=true", "aggregation.forward_timeout_ms=60000",
                f"state_dir={logs / 'primary-state'}"]), logs / "primary.log", host_env())
            base = f"http://{ph.address}:{LAN_PORT}"

            def primary_up() -> bool:
                if primary.poll() is not None:
                    tail = (logs / "primary.log").read_text(errors="replace")[-2000:]
                    raise SystemExit(f"the primary exited with {primary.returncode}:\n{tail}")
                return request("GET", base + "/api/v1/health")[0] == 200
            wait_until(primary_up, 120, "primary")
            print(f"lab of {len(names) + 1} hosts and the primary up after "
                  f"{time.monotonic() - t_lab:.1f} s", flush=True)
            if not args.link_per_robot:
                lab.start_link_hubs(logs, args.link_hubs)
            build = Build(lab, names, args, logs, base, recorder)
            build.run()
            joins = build.joins()
            print(f"{len(build.online)}/{len(names)} robots online {build.took:.1f} s after "
                  f"the start ({len(build.failed)} failed); "
                  f"{sum(j <= 10 for j in joins)} joined within 10 s; join after ready p50 "
                  f"{pct(joins, .5):.2f} s, p99 {pct(joins, .99):.2f} s, max "
                  f"{max(joins, default=float('nan')):.2f} s (target <= 10 s)", flush=True)
            n = max(1, len(build.online))
            time.sleep(args.settle_s)
            kinds, idle = measure_idle(primary.pid, build.robots, n, args.idle_s,
                                       [h.pid for h in lab.hubs])
            if args.idle_only:
                print("tearing down (--idle-only)", flush=True)
                return
            client = Client(ph.address)
            measure_reads(client, args.reads, len(build.online), rtt)
            measure_live_cost(client, kinds, idle)
            events = Events(ph.address)
            time.sleep(3.0)
            apps = measure_events(client, events, base, rtt)
            cut = [x for x in names if x != recorder][: max(1, min(3, len(names) // 10))]
            measure_partitions(client, events, build.robots, cut, args.partition_s)
            measure_move(client, lab, build.robots[names[-1]])
            app = next((a for a, v in apps.items()
                        if v["x-vendor"]["contributors"][0] == recorder), None)
            measure_download(client, ph.address, base, app, args.rate_bps)
            cpu, rss = cpu_rss(primary.pid)
            print(f"primary at the end: {rss / 2**20:.0f} MiB RSS ({rss / n / 2**20:.2f} MiB "
                  f"per robot), {cpu:.0f} s CPU in all", flush=True)
            print("tearing down", flush=True)
    except KeyboardInterrupt as exc:
        print(f"interrupted ({str(exc) or 'Ctrl-C'}): lab torn down", flush=True)
        sys.exit(130)
    finally:
        if build is not None:
            build.close()


if __name__ == "__main__":
    main()
