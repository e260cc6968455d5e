"""Cost of federation: merged collection reads on a primary with 8 and 32 peers, vs a local read.

Peers are real gateways watching two small robots (two demo nodes each). For each peer count
two primaries run with that many static peers, one fanning out live and one with the read
cache (aggregation.cache.enabled). `GET /components/<host>/data` is read by wrk over one
keep-alive connection from the live primary, the cached primary and (the baseline, a local
read) one peer directly, in alternating rounds after a warm-up. Printed: p50 of each, the
median of per-round p50 ratios merged/local with spread, the live primary's CPU per peer per
merged read, each robot's CPU per live merged read (above its idle use), each server's CPU per read (the cached primary's against the peer's local read:
a check of the p50 ratio that the machine's load does not blur), and the robots' CPU while a
dashboard polls the cached primary once a second.
Targets: live CPU per peer per read <= 60 us, live p50 at 32 peers <= 5 ms,
cached merged read <= 1.5x the local read, robots' CPU near zero while nothing changes.
With --hung, one peer then hangs (its data route never answers): the read is bounded by
aggregation.timeout_ms. With --liveness, how fast a stopped, resumed, killed and restarted
peer is seen offline and back online in the primary's /health.

Usage: python bench/fanout.py [--seconds S] [--counts 8,32] [--hung] [--liveness]
       (ROS domains $BENCH_DOMAIN, +1, +2; default 77)
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

from bench._wrk import WrkResult, cpu_s, run_measured, run_wrk, spread, wrk_path  # noqa: E402
from gateway.demo.robot import Robot  # noqa: E402
from gateway.settings.config import load as load_settings  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.fleet.junk import JunkProxy  # noqa: E402
from tests.harness import Gateway  # noqa: E402

BASE_DOMAIN = int(os.environ.get("BENCH_DOMAIN", "77"))
PRIMARY_DOMAIN, ROBOT_DOMAINS = BASE_DOMAIN, (BASE_DOMAIN + 1, BASE_DOMAIN + 2)
COUNTS = (8, 32)
BUDGET_MS = 500
ROUNDS = 5
CPU_PER_PEER_TARGET_US = 60.0
P50_AT_32_TARGET_MS = 5.0
CACHED_RATIO_TARGET = 1.5
POLL_S = 5.0  # dashboard polling window for the robots' CPU
POLL_ROUNDS = 3  # windows without and with the dashboard, alternated


def start_peers(n: int, logs: Path) -> list[Gateway]:
    """n peer gateways, alternating between the two robot domains, started in parallel."""
    gws = [Gateway(free_port(), ROBOT_DOMAINS[k % 2], ["discovery.poll_interval_ms=500"],
                   logs / f"peer{k}.log") for k in range(n)]
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda g: g.start(timeout=120), gws))
    return gws


def start_primary(urls: list[str], logs: Path, name: str, cached: bool = False) -> Gateway:
    names = [f"p{k}" for k in range(len(urls))]
    gw = Gateway(free_port(), PRIMARY_DOMAIN, [
        "aggregation.enabled=true", f"aggregation.peer_urls=[{','.join(urls)}]",
        f"aggregation.peer_names=[{','.join(names)}]", f"aggregation.timeout_ms={BUDGET_MS}",
        f"aggregation.cache.enabled={str(cached).lower()}", "discovery.poll_interval_ms=500",
        f"state_dir={logs / (name + '-state')}"], logs / f"{name}.log").start(timeout=60)
    gw.wait_for("/health", lambda b: all(p["status"] == "online" for p in b["peers"]), 60)
    gw.wait_for("/components", lambda b: b["items"] and len(
        b["items"][0]["x-vendor"]["contributors"]) == len(urls) + 1, 60)
    return gw


def until(gw: Gateway, name: str, status: str, timeout: float = 30.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        peers = {p["name"]: p["status"] for p in gw.get("/health").json()["peers"]}
        if peers.get(name) == status:
            return time.monotonic() - t0
        time.sleep(0.02)
    return float("inf")


def detection(primary: Gateway, peer: Gateway, name: str, rounds: int) -> None:
    """Offline/online detection times of one peer in the primary's /health."""
    pid = peer.proc.pid  # type: ignore[union-attr]
    stop, cont, kill, back = [], [], [], []
    for _ in range(rounds):
        os.kill(pid, signal.SIGSTOP)
        stop.append(until(primary, name, "offline"))
        os.kill(pid, signal.SIGCONT)
        cont.append(until(primary, name, "online"))
        time.sleep(1.0)
    for _ in range(rounds):
        os.kill(peer.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
        kill.append(until(primary, name, "offline"))
        peer.proc.wait(10)  # type: ignore[union-attr]
        peer.start(timeout=60)
        back.append(until(primary, name, "online"))
        time.sleep(1.0)

    def fmt(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs) + f"  (max {max(xs):.2f} s)"
    print(f"hung (SIGSTOP) -> offline:   {fmt(stop)}")
    print(f"resumed (SIGCONT) -> online: {fmt(cont)}")
    print(f"killed (SIGKILL) -> offline: {fmt(kill)}")
    print(f"restarted -> online (after its /health answers): {fmt(back)}")


def pid(gw: Gateway) -> int:
    assert gw.proc is not None
    return gw.proc.pid


def robots_cpu_ms_per_s(peers: list[Gateway], primary: Gateway, path: str) -> float:
    """The peers' CPU (ms per second, summed) while a dashboard polls primary once a second."""
    before = sum(cpu_s(pid(g)) for g in peers)
    t0 = time.monotonic()
    while time.monotonic() - t0 < POLL_S:
        with urllib.request.urlopen(f"http://127.0.0.1:{primary.port}{path}", timeout=5):
            pass
        time.sleep(1.0)
    return (sum(cpu_s(pid(g)) for g in peers) - before) * 1e3 / (time.monotonic() - t0)


def compare(n: int, peers: list[Gateway], logs: Path, path: str, seconds: float) -> None:
    """Live and cached primaries with n peers against a local read; prints the figures."""
    urls = [f"http://127.0.0.1:{g.port}" for g in peers[:n]]
    live = start_primary(urls, logs, f"primary{n}")
    cached = start_primary(urls, logs, f"primary{n}-cached", cached=True)
    try:
        items = len(live.get(path[len("/api/v1"):]).json()["items"])
        c0 = cpu_s(pid(live))
        time.sleep(3.0)
        idle_rate = (cpu_s(pid(live)) - c0) / 3.0  # health probes, refreshes, ROS: not reads
        sides = {"local": (peers[0], pid(peers[0])), "live": (live, pid(live)),
                 "cached": (cached, pid(cached))}
        for gw, _ in sides.values():
            run_wrk(f"http://127.0.0.1:{gw.port}{path}", 1.0, 1)
        res: dict[str, list[WrkResult]] = {k: [] for k in sides}
        robots = [pid(g) for g in peers[:n]]
        robots_live_s = live_s = 0.0  # the robots' CPU during the live rounds, and their time
        for _ in range(ROUNDS):
            for label, (gw, p) in sides.items():
                r0, t0 = sum(cpu_s(x) for x in robots), time.monotonic()
                res[label].append(run_measured(f"http://127.0.0.1:{gw.port}{path}", p,
                                               seconds, connections=1))
                if label == "live":
                    robots_live_s += sum(cpu_s(x) for x in robots) - r0
                    live_s += time.monotonic() - t0
        idles: list[float] = []
        polls: list[float] = []
        for _ in range(POLL_ROUNDS):
            idles.append(robots_cpu_ms_per_s(peers[:n], live, "/api/v1/health"))
            polls.append(robots_cpu_ms_per_s(peers[:n], cached, path))
        idle, polled = statistics.median(idles), statistics.median(polls)
        cache_stats = cached.get("/health").json().get("x-vendor-read-cache", {})
    finally:
        live.stop()
        cached.stop()
    p50 = {k: statistics.median(r.p50_ms for r in v) for k, v in res.items()}
    live_ratio = [lv.p50_ms / lo.p50_ms for lv, lo in zip(res["live"], res["local"],
                                                         strict=True)]
    cached_ratio = [c.p50_ms / lo.p50_ms for c, lo in zip(res["cached"], res["local"],
                                                         strict=True)]
    cpu = {k: statistics.median(r.cpu_us_per_req for r in v) for k, v in res.items()}
    cpu_ratio = [c.cpu_us_per_req / lo.cpu_us_per_req for c, lo in zip(
        res["cached"], res["local"], strict=True)]
    raw_per_peer = statistics.median(r.cpu_us_per_req for r in res["live"]) / n
    per_peer = statistics.median(r.cpu_us_per_req - idle_rate * 1e6 / r.rps
                                 for r in res["live"]) / n
    print(f"{n} peers ({items} merged items), wrk 1 connection, {ROUNDS} alternating rounds "
          f"x {seconds:g} s")
    print(f"  local read (one peer directly)   p50 {p50['local']:7.2f} ms")
    print(f"  merged, live fan-out             p50 {p50['live']:7.2f} ms; ratio to local "
          f"{spread(live_ratio)}")
    print(f"  merged, read cache               p50 {p50['cached']:7.2f} ms; ratio to local "
          f"{spread(cached_ratio)}; target <= {CACHED_RATIO_TARGET:g}: "
          f"{'met' if statistics.median(cached_ratio) <= CACHED_RATIO_TARGET else 'NOT met'}")
    print(f"  server CPU per read: local {cpu['local']:.0f} us, cached {cpu['cached']:.0f} us "
          f"(ratio {spread(cpu_ratio)}), live {cpu['live']:.0f} us")
    print(f"  live primary CPU per peer per merged read {per_peer:.0f} us above its idle "
          f"{idle_rate * 1e3:.0f} ms/s ({raw_per_peer:.0f} us with it); target <= "
          f"{CPU_PER_PEER_TARGET_US:g} us: "
          f"{'met' if per_peer <= CPU_PER_PEER_TARGET_US else 'NOT met'}")
    reads = sum(r.rps * seconds for r in res["live"])
    per_robot = (robots_live_s - idle / 1e3 * live_s) / reads / n * 1e6
    print(f"  each robot's CPU per live merged read {per_robot:.0f} us above its idle")
    if n == 32:
        print(f"  live p50 at 32 peers {p50['live']:.2f} ms; target <= {P50_AT_32_TARGET_MS:g} "
              f"ms: {'met' if p50['live'] <= P50_AT_32_TARGET_MS else 'NOT met'}")
    print(f"  robots' CPU, all {n} summed: {idle:.1f} ms/s with no dashboard; {polled:.1f} ms/s "
          f"with a dashboard polling the cached primary every 1 s (medians of {POLL_ROUNDS} "
          f"alternated {POLL_S:g} s windows: {', '.join(f'{x:.0f}' for x in idles)} against "
          f"{', '.join(f'{x:.0f}' for x in polls)}; per robot {(polled - idle) / n:+.2f} ms/s)")
    print(f"  cached primary's read cache: {cache_stats}")


def hung_read(n: int, peers: list[Gateway], logs: Path, path: str, seconds: float) -> None:
    """One hung peer among n: the merged read costs one budget."""
    urls = [f"http://127.0.0.1:{g.port}" for g in peers[:n]]
    proxy = JunkProxy(peers[0].port).start()
    proxy.rules = {r"/components/.*/data": "hang"}
    urls[0] = f"http://127.0.0.1:{proxy.port}"
    primary = start_primary(urls, logs, f"primary{n}-hung")
    try:
        r = run_wrk(f"http://127.0.0.1:{primary.port}{path}", max(seconds, 3.0), 1)
        print(f"{n} peers, 1 hung: p50 {r.p50_ms:.1f} ms, p99 {r.p99_ms:.1f} ms "
              f"= {r.p99_ms / BUDGET_MS:.2f} budgets (aggregation.timeout_ms={BUDGET_MS})")
    finally:
        primary.stop()
        proxy.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--counts", default=",".join(map(str, COUNTS)))
    ap.add_argument("--hung", action="store_true")
    ap.add_argument("--liveness", action="store_true")
    ap.add_argument("--detection-rounds", type=int, default=3)
    args = ap.parse_args()
    wrk_path()
    counts = [int(c) for c in args.counts.split(",")]
    defaults = load_settings(None, [])
    logs = Path(f"/tmp/fanout-bench-{os.getpid()}")
    logs.mkdir(parents=True, exist_ok=True)
    robots = [Robot.start(d, nodes=("temp_sensor", "rpm_sensor")) for d in ROBOT_DOMAINS]
    peers: list[Gateway] = []
    try:
        peers = start_peers(max(counts), logs)
        host = peers[0].get("/components").json()["items"][0]["id"]
        path = f"/api/v1/components/{host}/data"
        peers[0].wait_for(f"/components/{host}/data", lambda b: len(b["items"]) == 2, 30)
        print(f"merged read GET {path} (2 topics per peer); aggregation.timeout_ms={BUDGET_MS}, "
              f"aggregation.cache.max_age_ms={defaults.get('aggregation.cache.max_age_ms', 'n/a')}, "
              f"aggregation.refresh_interval_ms={defaults['aggregation.refresh_interval_ms']}; "
              f"{os.cpu_count()} cores shared by every gateway, robot and wrk")
        for n in counts:
            compare(n, peers, logs, path, args.seconds)
            if args.hung:
                hung_read(n, peers, logs, path, args.seconds)
        if args.liveness:
            urls = [f"http://127.0.0.1:{g.port}" for g in peers[:4]]
            primary = start_primary(urls, logs, "primary-detect")
            try:
                print("peer liveness seen in the primary's /health (health_interval_ms="
                      f"{defaults['aggregation.health_interval_ms']}):")
                detection(primary, peers[1], "p1", args.detection_rounds)
            finally:
                primary.stop()
    finally:
        for g in peers:
            g.stop()
        for r in robots:
            r.stop()


if __name__ == "__main__":
    main()
