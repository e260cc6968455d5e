"""Manifest discovery: time from a manifest change to the new entity set, and entity-list
throughput in hybrid mode against runtime_only (the baseline), same demo robot.

Both gateways are loaded in alternating rounds (wrk when installed, else bench/_load.py);
the ratio printed is the median of the per-round hybrid/runtime_only ratios. The reload
latency (edits at random phases of the watcher) is given against the file-watch interval:
detection alone averages half of it.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._load import run_load  # noqa: E402
from gateway.demo.robot import NODES, Robot  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = int(os.environ.get("DIAG_BENCH_DOMAIN", "163"))
SECONDS = 3.0
ROUNDS = 4
RELOADS = 8
WATCH_MS = 500
PATHS = ("/api/v1/apps", "/api/v1/components")


def throughput(port: int, path: str) -> float:
    """Requests per second of GET path over 16 keep-alive connections."""
    if shutil.which("wrk"):
        out = subprocess.run(["wrk", "-t2", "-c16", f"-d{SECONDS:g}s",
                              f"http://127.0.0.1:{port}{path}"],
                             capture_output=True, text=True, check=True).stdout
        match = re.search(r"Requests/sec:\s+([\d.]+)", out)
        errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if errors:
            raise RuntimeError(f"{path}: {errors.group(1)} error responses")
        assert match, out
        return float(match.group(1))
    result = asyncio.run(run_load("127.0.0.1", port, path, SECONDS))
    if result.errors:
        raise RuntimeError(f"{path}: {result.errors} error responses")
    return result.rps


def reload_latency(gw: Gateway, manifest: Path, text: str, n: int) -> float:
    """Seconds from an atomic manifest replace to the new area in GET /areas."""
    time.sleep(random.uniform(0, WATCH_MS / 1000))  # no phase lock with the watcher's polls
    area = f"bench-area-{n}"
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(text.replace("areas:\n", f"areas:\n  - id: {area}\n", 1))
    t0 = time.perf_counter()
    os.replace(tmp, manifest)
    while area not in {i["id"] for i in gw.get("/areas").json()["items"]}:
        time.sleep(0.005)
    return time.perf_counter() - t0


def main() -> None:
    """Measure and print."""
    with tempfile.TemporaryDirectory() as tmp_dir, Robot.start(DOMAIN):
        tmp = Path(tmp_dir)
        manifest = tmp / "manifest.yaml"
        text = (ROOT / "deploy" / "demo_manifest.yaml").read_text()
        manifest.write_text(text)
        common = ["discovery.refresh_debounce_ms=100"]
        runtime = Gateway(free_port(), DOMAIN, [*common, f"state_dir={tmp / 'rt'}"],
                          tmp / "rt.log").start()
        hybrid = Gateway(free_port(), DOMAIN, [
            *common, "discovery.mode=hybrid", f"discovery.manifest_path={manifest}",
            f"discovery.inventory.csv_path={ROOT / 'deploy' / 'demo_inventory.csv'}",
            f"discovery.manifest.watch_interval_ms={WATCH_MS}", f"state_dir={tmp / 'hy'}"],
            tmp / "hy.log").start()
        try:
            for gw in (runtime, hybrid):
                gw.wait_for("/apps", lambda b: len(b["items"]) >= len(NODES), timeout=60)
            latencies = [reload_latency(hybrid, manifest, text, n) for n in range(RELOADS)]
            for path in PATHS:  # warm-up
                throughput(runtime.port, path)
                throughput(hybrid.port, path)
            tool = "wrk" if shutil.which("wrk") else "bench/_load.py"
            print(f"manifest change -> new entity set over {RELOADS} edits "
                  f"(watch interval {WATCH_MS} ms, atomic replace)")
            print(f"  median {statistics.median(latencies) * 1000:.0f} ms   max "
                  f"{max(latencies) * 1000:.0f} ms   ratio to watch interval "
                  f"{statistics.median(latencies) * 1000 / WATCH_MS:.2f}")
            print(f"entity-list throughput, hybrid vs runtime_only ({tool}, 16 connections, "
                  f"{ROUNDS} alternating rounds of {SECONDS:g} s)")
            for path in PATHS:
                rt, hy = [], []
                for _ in range(ROUNDS):
                    rt.append(throughput(runtime.port, path))
                    hy.append(throughput(hybrid.port, path))
                ratios = [h / r for h, r in zip(hy, rt, strict=True)]
                print(f"  GET {path:<20} runtime_only {statistics.median(rt):8.0f} req/s   "
                      f"hybrid {statistics.median(hy):8.0f} req/s   median ratio "
                      f"{statistics.median(ratios):.2f}")
        finally:
            hybrid.stop()
            runtime.stop()


if __name__ == "__main__":
    main()
