"""Gateway start and memory with the demo robot: /health ready, all demo apps listed, USS, RSS.

The demo robot runs first; each round starts a gateway process and times, from the Popen,
the first /health that says `ready: true` (and, for reference, its first answer at all) and
the first /apps that lists every demo app. After a short
warm use (a data read, /faults, /apps) it reads the process's USS and RSS. Targets:
ready <= 1.5 s, all demo apps listed <= 2 s, USS <= 50 MiB, RSS <= 120 MB.

    .venv/bin/python bench/startup.py     # ROS domain $BENCH_DOMAIN (default 95)
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from gateway.demo.robot import NODES, Robot  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway, enc  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "95"))
ROUNDS = 3
READY_TARGET_S = 1.5
APPS_TARGET_S = 2.0
USS_TARGET_MIB = 50.0
RSS_TARGET_MB = 120.0


def one_round(tmp: str, k: int) -> dict[str, float]:
    """Start a gateway; return its ready and apps times (s) and USS (MiB) and RSS (MB)."""
    import psutil

    gw = Gateway(free_port(), DOMAIN, [f"state_dir={tmp}/state{k}"])
    t0 = time.monotonic()
    gw.start(timeout=60)  # returns at the first /health answer (it may still say starting)
    answers = time.monotonic() - t0
    ready = apps = float("inf")
    while time.monotonic() - t0 < 30 and (ready == float("inf") or apps == float("inf")):
        try:
            if ready == float("inf") and gw.get("/health").json()["ready"]:
                ready = time.monotonic() - t0
            if apps == float("inf") and set(NODES) <= {
                    i["id"] for i in gw.get("/apps").json()["items"]}:
                apps = time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.02)
    try:
        gw.wait_for("/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature"),
                    lambda b: b["x-vendor"]["status"] == "data", timeout=20)
        gw.get("/faults")
        gw.get("/apps")
        time.sleep(2.0)
        assert gw.proc is not None
        mem = psutil.Process(gw.proc.pid).memory_full_info()
    finally:
        gw.stop()
    return {"answers": answers, "ready": ready, "apps": apps, "uss": mem.uss / 2**20, "rss": mem.rss / 1e6}


def main() -> None:
    """Run the rounds and print medians against the targets."""
    with tempfile.TemporaryDirectory() as tmp, Robot.start(DOMAIN):
        rows = [one_round(tmp, k) for k in range(ROUNDS)]

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print(f"gateway start with the demo robot ({len(NODES)} nodes), median of {ROUNDS} rounds "
          f"({os.cpu_count()} cores shared with everything else on this machine)")
    print(f"/health first answer after   {med('answers'):.2f} s "
          f"[{min(r['answers'] for r in rows):.2f}-{max(r['answers'] for r in rows):.2f}]")
    print(f"/health ready after          {med('ready'):.2f} s "
          f"[{min(r['ready'] for r in rows):.2f}-{max(r['ready'] for r in rows):.2f}]"
          f"  target <= {READY_TARGET_S:g} s: {verdict(med('ready') <= READY_TARGET_S)}")
    print(f"all demo apps listed after   {med('apps'):.2f} s "
          f"[{min(r['apps'] for r in rows):.2f}-{max(r['apps'] for r in rows):.2f}]"
          f"  target <= {APPS_TARGET_S:g} s: {verdict(med('apps') <= APPS_TARGET_S)}")
    print(f"USS {med('uss'):.1f} MiB  target <= {USS_TARGET_MIB:g} MiB: "
          f"{verdict(med('uss') <= USS_TARGET_MIB)};  RSS {med('rss'):.1f} MB  target <= "
          f"{RSS_TARGET_MB:g} MB: {verdict(med('rss') <= RSS_TARGET_MB)}")


if __name__ == "__main__":
    main()
