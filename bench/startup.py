"""Gateway start and memory with the demo robot: /health ready, all demo apps listed, USS, RSS.

The demo robot runs first; each round starts a gateway process and times, from the Popen,
the first /health that says `ready: true` (and, for reference, its first answer at all) and
the first /apps that lists every demo app. After a short
warm use (a data read, /faults, /apps) it reads the process's USS and RSS. Targets:
ready <= 1.5 s, all demo apps listed <= 2 s, USS <= 50 MiB, RSS <= 120 MB. Rounds alternate
with a floor process (bench/_floor_start.py: aiohttp + rclpy and one node, ready once every
demo node is in the graph) and print the median of per-round ratios to it, so a loaded
machine can still compare; the CPU seconds until ready is the least load-dependent figure.

    .venv/bin/python bench/startup.py [--rounds N]   # ROS domain $BENCH_DOMAIN (default 95)

Each round's ready time is printed for both sides too: how often the floor itself misses the
ready target says how much of the start is DDS discovery rather than the gateway.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from gateway.demo.robot import NODES, Robot, ros_env  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway, enc  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "95"))
ROUNDS = 3
READY_TARGET_S = 1.5
APPS_TARGET_S = 2.0
USS_TARGET_MIB = 50.0
RSS_TARGET_MB = 120.0


def _watch(get: Any, t0: float, pid: int) -> dict[str, float]:
    """Poll /health and /apps until ready and every demo app is listed; times from t0 (s)
    and the process's CPU seconds when it said ready."""
    ready = apps = cpu = float("inf")
    while time.monotonic() - t0 < 60 and (ready == float("inf") or apps == float("inf")):
        try:
            if ready == float("inf") and get("/health").json()["ready"]:
                ready = time.monotonic() - t0
                times = psutil.Process(pid).cpu_times()
                cpu = times.user + times.system
            if apps == float("inf") and set(NODES) <= {
                    i["id"] for i in get("/apps").json()["items"]}:
                apps = time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.02)
    return {"ready": ready, "apps": apps, "cpu": cpu}


def _memory(pid: int) -> dict[str, float]:
    mem = psutil.Process(pid).memory_full_info()
    return {"uss": mem.uss / 2**20, "rss": mem.rss / 1e6}


def gateway_round(tmp: str, k: int) -> dict[str, float]:
    """Start a gateway; its first-answer, ready and apps times (s), CPU (s), USS and RSS."""
    gw = Gateway(free_port(), DOMAIN, [f"state_dir={tmp}/state{k}"])
    t0 = time.monotonic()
    gw.start(timeout=60)  # returns at the first /health answer (it may still say starting)
    answers = time.monotonic() - t0
    try:
        assert gw.proc is not None
        row = {"answers": answers, **_watch(gw.get, t0, gw.proc.pid)}
        gw.wait_for("/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature"),
                    lambda b: b["x-vendor"]["status"] == "data", timeout=20)
        gw.get("/faults")
        gw.get("/apps")
        time.sleep(2.0)
        row.update(_memory(gw.proc.pid))
    finally:
        gw.stop()
    return row


def floor_round() -> dict[str, float]:
    """The same figures for bench/_floor_start.py (aiohttp + rclpy, one node, no gateway)."""
    port = free_port()
    probe = Gateway(port, DOMAIN)  # only its HTTP client
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "_floor_start.py"), str(port),
                             *NODES], env=ros_env(DOMAIN), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        row = _watch(probe.get, t0, proc.pid)
        time.sleep(2.0)
        row.update(_memory(proc.pid))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return row


def main() -> None:
    """Alternate gateway and floor rounds; print medians against the targets and the floor."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"gateway rounds, each followed by a floor round (default {ROUNDS})")
    rounds = parser.parse_args().rounds
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory() as tmp, Robot.start(DOMAIN):
        floor_round()  # warm-up: page cache, .pyc files
        rows, floors = [], []
        for k in range(rounds):
            rows.append(gateway_round(tmp, k))
            floors.append(floor_round())

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    def span(key: str) -> str:
        return f"[{min(r[key] for r in rows):.2f}-{max(r[key] for r in rows):.2f}]"

    def ratio(key: str) -> str:
        rs = [r[key] / f[key] for r, f in zip(rows, floors, strict=True)]
        return (f"{statistics.median(rs):.2f}x the floor [{min(rs):.2f}-{max(rs):.2f}] "
                f"(floor {statistics.median(f[key] for f in floors):.2f})")

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print(f"gateway start with the demo robot ({len(NODES)} nodes), median of {rounds} rounds "
          f"({os.cpu_count()} cores shared with everything else on this machine); the floor: "
          "aiohttp + rclpy, one node, ready once every demo node is in the graph")
    print(f"/health first answer after   {med('answers'):.2f} s {span('answers')}")
    print(f"/health ready after          {med('ready'):.2f} s {span('ready')}"
          f"  target <= {READY_TARGET_S:g} s: {verdict(med('ready') <= READY_TARGET_S)};  "
          f"{ratio('ready')}")
    for name, side in (("gateway", rows), ("floor", floors)):
        late = sum(r["ready"] > READY_TARGET_S for r in side)
        print(f"  {name:8} ready per round  "
              + " ".join(f"{r['ready']:.2f}" for r in side)
              + f"  ({late} of {len(side)} over {READY_TARGET_S:g} s)")
    print(f"all demo apps listed after   {med('apps'):.2f} s {span('apps')}"
          f"  target <= {APPS_TARGET_S:g} s: {verdict(med('apps') <= APPS_TARGET_S)};  "
          f"{ratio('apps')}")
    print(f"CPU until ready              {med('cpu'):.2f} s {span('cpu')};  {ratio('cpu')}")
    print(f"USS {med('uss'):.1f} MiB  target <= {USS_TARGET_MIB:g} MiB: "
          f"{verdict(med('uss') <= USS_TARGET_MIB)};  {ratio('uss')}")
    print(f"RSS {med('rss'):.1f} MB  target <= {RSS_TARGET_MB:g} MB: "
          f"{verdict(med('rss') <= RSS_TARGET_MB)};  {ratio('rss')}")


if __name__ == "__main__":
    main()
