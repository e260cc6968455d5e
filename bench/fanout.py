"""Cost of federation: a merged collection read on a primary with 1-32 peers, vs a direct read.

Peers are real gateways watching two small robots (two demo nodes each). For each peer count
the primary is restarted with that many static peers and `GET /components/<host>/data` is
read sequentially over one keep-alive connection; the baseline is the same read sent to one
peer directly, in the same run. Then one peer hangs (a proxy that never answers its data
route while its health check passes): the read is bounded by aggregation.timeout_ms, never by
the sum over peers. Last, how fast a stopped, resumed, killed and restarted peer is seen
offline and back online in the primary's /health (goal: within 3 s).

Usage: python bench/fanout.py [--seconds S] [--max-peers N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

from bench._load import LoadResult, run_load  # noqa: E402
from gateway.demo.robot import Robot  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.fleet.junk import JunkProxy  # noqa: E402
from tests.harness import Gateway  # noqa: E402

PRIMARY_DOMAIN, ROBOT_DOMAINS = 77, (78, 79)
COUNTS = (1, 4, 8, 16, 32)
BUDGET_MS = 500


def start_peers(n: int, logs: Path) -> list[Gateway]:
    """n peer gateways, alternating between the two robot domains, started in parallel."""
    gws = [Gateway(free_port(), ROBOT_DOMAINS[k % 2], ["discovery.poll_interval_ms=500"],
                   logs / f"peer{k}.log") for k in range(n)]
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda g: g.start(timeout=120), gws))
    return gws


def start_primary(urls: list[str], logs: Path, name: str) -> Gateway:
    names = [f"p{k}" for k in range(len(urls))]
    gw = Gateway(free_port(), PRIMARY_DOMAIN, [
        "aggregation.enabled=true", f"aggregation.peer_urls=[{','.join(urls)}]",
        f"aggregation.peer_names=[{','.join(names)}]", f"aggregation.timeout_ms={BUDGET_MS}",
        "discovery.poll_interval_ms=500"], logs / f"{name}.log").start(timeout=60)
    gw.wait_for("/health", lambda b: all(p["status"] == "online" for p in b["peers"]), 60)
    gw.wait_for("/components", lambda b: b["items"] and len(
        b["items"][0]["x-vendor"]["contributors"]) == len(urls) + 1, 60)
    return gw


def measure(port: int, path: str, seconds: float) -> LoadResult:
    asyncio.run(run_load("127.0.0.1", port, path, min(1.0, seconds), connections=1))
    return asyncio.run(run_load("127.0.0.1", port, path, seconds, connections=1))


def row(label: str, r: LoadResult, base: LoadResult | None = None) -> str:
    ratio = f"   x{r.pct(50) / base.pct(50):5.1f} p50 vs direct" if base else ""
    return (f"{label:<28} p50 {r.pct(50):8.2f} ms   p99 {r.pct(99):8.2f} ms   "
            f"n={r.requests:<5} errors {r.errors}{ratio}")


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--max-peers", type=int, default=max(COUNTS))
    ap.add_argument("--detection-rounds", type=int, default=3)
    args = ap.parse_args()
    counts = [n for n in COUNTS if n <= args.max_peers]
    logs = Path(f"/tmp/fanout-bench-{os.getpid()}")
    logs.mkdir(parents=True, exist_ok=True)
    robots = [Robot.start(d, nodes=("temp_sensor", "rpm_sensor")) for d in ROBOT_DOMAINS]
    peers: list[Gateway] = []
    proxy: JunkProxy | None = None
    try:
        peers = start_peers(max(counts), logs)
        host = peers[0].get("/components").json()["items"][0]["id"]
        path = f"/api/v1/components/{host}/data"
        peers[0].wait_for(f"/components/{host}/data", lambda b: len(b["items"]) == 2, 30)
        print(f"merged read GET {path} (2 topics per peer), one keep-alive connection, "
              f"{args.seconds:g} s per figure; aggregation.timeout_ms={BUDGET_MS}")
        results: dict[int, tuple[LoadResult, LoadResult]] = {}
        hung: dict[int, LoadResult] = {}
        for n in counts:
            urls = [f"http://127.0.0.1:{g.port}" for g in peers[:n]]
            primary = start_primary(urls, logs, f"primary{n}")
            try:
                direct = measure(peers[0].port, path, args.seconds)
                merged = measure(primary.port, path, args.seconds)
                items = len(primary.get(path[len("/api/v1"):]).json()["items"])
                results[n] = (direct, merged)
                print(row("direct (1 peer, baseline)", direct))
                print(row(f"primary, {n:2d} peers ({items} items)", merged, direct))
            finally:
                primary.stop()
            # one hung peer: its health passes, its data route never answers
            proxy = JunkProxy(peers[0].port).start()
            proxy.rules = {r"/components/.*/data": "hang"}
            urls[0] = f"http://127.0.0.1:{proxy.port}"
            primary = start_primary(urls, logs, f"primary{n}-hung")
            try:
                hung[n] = measure(primary.port, path, max(args.seconds, 3.0))
                print(row(f"primary, {n:2d} peers, 1 hung", hung[n])
                      + f"   = {hung[n].pct(99) / BUDGET_MS:.2f} budgets at p99")
            finally:
                primary.stop()
                proxy.stop()
                proxy = None
        print()
        print("summary (ms)            " + "".join(f"{n:>10d}" for n in counts))
        print("direct p50              " + "".join(f"{results[n][0].pct(50):10.2f}"
                                                     for n in counts))
        print("merged p50              " + "".join(f"{results[n][1].pct(50):10.2f}"
                                                     for n in counts))
        print("merged p99              " + "".join(f"{results[n][1].pct(99):10.2f}"
                                                     for n in counts))
        print("ratio merged/direct p50 " + "".join(
            f"{results[n][1].pct(50) / results[n][0].pct(50):10.1f}" for n in counts))
        print("1 hung peer p50         " + "".join(f"{hung[n].pct(50):10.2f}" for n in counts))
        print("1 hung peer p99         " + "".join(f"{hung[n].pct(99):10.2f}" for n in counts))
        print(f"(a hung peer costs one budget, {BUDGET_MS} ms, whatever the peer count)")
        print()
        urls = [f"http://127.0.0.1:{g.port}" for g in peers[:4]]
        primary = start_primary(urls, logs, "primary-detect")
        try:
            print("peer liveness seen in the primary's /health (health_interval_ms=500):")
            detection(primary, peers[1], "p1", args.detection_rounds)
        finally:
            primary.stop()
    finally:
        if proxy is not None:
            proxy.stop()
        for g in peers:
            g.stop()
        for r in robots:
            r.stop()


if __name__ == "__main__":
    main()
