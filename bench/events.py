"""Push delivery through a real gateway process: trigger event latency and subscription CPU.

Latency: a node in this process publishes std_msgs/Float64 samples carrying their publish time
on /bench_events/level; N = 1, 100 and 1000 multishot OnChange triggers observe the topic, each
with its own SSE client (clients in worker processes). Printed: p50/p99 of publish -> event
arrival at every client, and each p50 against the 1-stream p50 of the same run.

CPU: the gateway's CPU use with 100 cyclic subscriptions (200 ms, each with a connected client)
against the same gateway idle, in alternating rounds; printed: CPU per round and the median of
the per-round ratios. Everything shares this machine's cores.

    .venv/bin/python bench/events.py            # ROS domain 179 ($EVENTS_BENCH_DOMAIN)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from bench._sse import Workers, pct, run_clients  # noqa: E402
from bench._wrk import cpu_s  # noqa: E402

DOMAIN = int(os.environ.get("EVENTS_BENCH_DOMAIN", "179"))
QUICK = bool(os.environ.get("EVENTS_BENCH_QUICK"))  # a small sanity run of the same code
STREAM_COUNTS = (1, 10) if QUICK else (1, 100, 1000)
ROUNDS = 5 if QUICK else 20
ROUND_GAP_S = 0.25
CLIENTS_PER_WORKER = 500
SUBSCRIPTIONS = 10 if QUICK else 100
CPU_ROUNDS = 1 if QUICK else 3
CPU_WINDOW_S = 4.0
NS = "/bench_events"
RESOURCE = f"/api/v1/apps/bench_pub/data{NS}/level"


# worker process: SSE clients ----------------------------------------------------------------

async def _worker(port: int, paths: list[str], expect: int) -> None:
    latencies: list[float] = []

    def on_data(data: bytes, now: int) -> bool:
        sent = orjson.loads(data)["payload"].get("data")
        if isinstance(sent, (int, float)):
            latencies.append((now - sent * 1e9) / 1e6)
        return True

    await run_clients(port, paths, expect, on_data)
    print(json.dumps(latencies), flush=True)


def path_workers(port: int, paths: list[str], expect: int) -> Workers:
    """Worker processes, one SSE client per path."""
    n = max(1, math.ceil(len(paths) / CLIENTS_PER_WORKER))
    return Workers(__file__, [["--port", str(port), "--expect", str(expect),
                               "--paths", json.dumps(paths[i::n])] for i in range(n)])


# main process -------------------------------------------------------------------------------

def latency_round(gw: Any, pub: Any, streams: int) -> list[float]:
    """Latencies (ms) of ROUNDS samples at each of `streams` trigger streams."""
    made = []
    for _ in range(streams):
        resp = gw.request("POST", "/apps/bench_pub/triggers", {
            "resource": RESOURCE, "path": "/data", "multishot": True,
            "trigger_condition": {"condition_type": "OnChange"}})
        assert resp.status == 201, resp
        made.append(resp.json()["event_source"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # every trigger resolved its topic
        items = gw.get("/apps/bench_pub/triggers").json()["items"]
        if all("topic" in t["x-vendor"] for t in items):
            break
        time.sleep(0.2)
    workers = path_workers(gw.port, made, ROUNDS)
    try:
        for _ in range(ROUNDS):
            pub.send(time.time_ns() / 1e9)
            time.sleep(ROUND_GAP_S)
        return workers.latencies()
    finally:
        workers.stop()
        for source in made:
            gw.request("DELETE", source[len("/api/v1"):-len("/events")])


def frames_sent(gw: Any) -> int:
    """SSE frames the gateway's push streams have written so far."""
    return int(gw.get("/health").json()["x-vendor-push"]["frames_sent"])


def cpu_round(gw: Any, active: bool) -> tuple[float, float]:
    """Gateway CPU (share of one core) and frames/s over CPU_WINDOW_S, with or without the
    subscriptions."""
    workers = None
    if active:
        paths = []
        for _ in range(SUBSCRIPTIONS):
            resp = gw.request("POST", "/apps/bench_pub/cyclic-subscriptions", {
                "resource": RESOURCE, "interval": "normal", "duration": 600})
            assert resp.status == 201, resp
            paths.append(resp.json()["event_source"])
        workers = path_workers(gw.port, paths, 10**9)
        time.sleep(1.0)  # settle: first ticks delivered
    try:
        f0 = frames_sent(gw)
        cpu0, t0 = cpu_s(gw.proc.pid), time.perf_counter()
        time.sleep(CPU_WINDOW_S)
        used, took = cpu_s(gw.proc.pid) - cpu0, time.perf_counter() - t0
        return used / took, (frames_sent(gw) - f0) / took
    finally:
        if workers is not None:
            workers.stop()  # disconnects end the subscriptions
            deadline = time.monotonic() + 20
            while gw.get("/apps/bench_pub/cyclic-subscriptions").json()["items"] and \
                    time.monotonic() < deadline:
                time.sleep(0.2)


class Publisher:
    """Float64 samples on the bench topic from a node of this process (optionally at 10 Hz)."""

    def __init__(self, ros: Any) -> None:
        from std_msgs.msg import Float64  # noqa: PLC0415 - ROS: not in the workers

        self.Float64 = Float64
        self.node = ros.node("bench_pub", NS)
        self.pub = self.node.create_publisher(Float64, f"{NS}/level", 10)
        self.timer: Any = None

    def send(self, value: float) -> None:
        self.pub.publish(self.Float64(data=value))

    def steady(self, hz: float) -> None:
        self.timer = self.node.create_timer(1.0 / hz, lambda: self.send(time.time()))


def main() -> None:
    from tests.conftest import free_port  # noqa: PLC0415 - not in the workers
    from tests.harness import Gateway  # noqa: PLC0415 - not in the workers
    from tests.integration.test_faults_support import RosSide  # noqa: PLC0415 - not in the workers

    with tempfile.TemporaryDirectory() as tmp:
        gw = Gateway(free_port(), DOMAIN, [
            f"state_dir={tmp}/state", "sse.max_clients=1100", "sse.max_subscriptions=200",
            "triggers.max_triggers=2000", "snapshots.enabled=false",
            "faults.rosout_bridge.enabled=false"], Path(tmp) / "gateway.log")
        gw.start()
        ros = RosSide(DOMAIN)
        latencies: dict[int, list[float]] = {}
        cpu: list[tuple[float, float]] = []
        rates: list[float] = []
        pub: Publisher | None = None
        try:
            pub = Publisher(ros)
            gw.wait_for("/apps/bench_pub/data", lambda b: bool(b["items"]), 30)
            for n in STREAM_COUNTS:
                latencies[n] = latency_round(gw, pub, n)
            pub.steady(10.0)
            for _ in range(CPU_ROUNDS):
                idle, _ = cpu_round(gw, active=False)
                busy, rate = cpu_round(gw, active=True)
                cpu.append((idle, busy))
                rates.append(rate)
        finally:
            if pub is not None and pub.timer is not None:
                pub.node.destroy_timer(pub.timer)
            ros.close()
            gw.stop()

    print(f"trigger event latency: Float64 sample published -> event at every client, {ROUNDS} "
          f"samples per N ({ROUND_GAP_S * 1000:.0f} ms apart), one OnChange trigger and one SSE "
          f"client per stream, {os.cpu_count()} cores shared by gateway, publisher and clients")
    print(f"{'streams':>8} {'events':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'p50 vs 1 stream':>16}")
    base = pct(latencies[1], 0.5)
    for n in STREAM_COUNTS:
        ms = latencies[n]
        print(f"{n:>8} {len(ms):>8} {pct(ms, 0.5):>8.2f} {pct(ms, 0.99):>8.2f} "
              f"{max(ms):>8.2f} {pct(ms, 0.5) / base:>15.1f}x")
    print(f"\ngateway CPU (share of one core), {CPU_WINDOW_S:.0f} s windows, idle and with "
          f"{SUBSCRIPTIONS} cyclic subscriptions at 200 ms (each streaming to a client), "
          f"topic at 10 Hz, alternating rounds")
    ratios = []
    for k, (idle, busy) in enumerate(cpu, 1):
        ratios.append(busy / idle if idle > 0 else float("inf"))
        print(f"  round {k}: idle {idle * 100:6.2f} %   {SUBSCRIPTIONS} subscriptions "
              f"{busy * 100:6.2f} %   ratio {ratios[-1]:.1f}x   "
              f"({rates[k - 1]:.0f} frames/s delivered)")
    print(f"  median ratio ({SUBSCRIPTIONS} subscriptions / idle): "
          f"{statistics.median(ratios):.1f}x; "
          f"median added CPU {statistics.median(b - i for i, b in cpu) * 100:.2f} % of a core")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--port", type=int)
    parser.add_argument("--expect", type=int)
    parser.add_argument("--paths")
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_worker(args.port, json.loads(args.paths), args.expect))
    else:
        main()
