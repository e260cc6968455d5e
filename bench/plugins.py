"""Gateway CPU with the graph and watchdog plugins on against off, side by side.

One demo robot; two gateways on its ROS domain at the same time: `off` without plugins,
`on` with `graph_provider` and `graph_watchdog` (every detector in its default mode). A client
asks `on` for the powertrain and perception graphs once a second and `off` for the same
functions' details, so both serve the same request rate. After a warm-up (the watchdog arms,
the graph's topics are watched), each round reads both processes' CPU time over the same
window; the figure is the median of the per-round ratios on/off.

    .venv/bin/python bench/plugins.py        # ROS domain 98 ($PLUGINS_BENCH_DOMAIN)
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.demo.robot import Robot, wait_for_graph  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = int(os.environ.get("PLUGINS_BENCH_DOMAIN", "98"))
WARMUP_S, WINDOW_S, ROUNDS = 15.0, 10.0, 5
FUNCTIONS = ("powertrain", "perception")


def poll(gw: Gateway, paths: list[str], stop: threading.Event) -> None:
    """GET each path once a second until stop."""
    while not stop.is_set():
        for p in paths:
            try:
                gw.get(p, timeout=10)
            except OSError:
                pass
        stop.wait(1.0)


def cpu_s(proc: psutil.Process) -> float:
    """User plus system CPU seconds of a process and its threads."""
    t = proc.cpu_times()
    return float(t.user + t.system)


def main() -> int:
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    with tempfile.TemporaryDirectory() as tmp, Robot.start(DOMAIN, log_dir=Path(tmp) / "robot"):
        wait_for_graph(DOMAIN, timeout=30)
        off = Gateway(free_port(), DOMAIN, [f"state_dir={tmp}/off"], Path(tmp) / "off.log")
        on = Gateway(free_port(), DOMAIN, [f"state_dir={tmp}/on",
                                           "plugins=[graph_provider,graph_watchdog]"],
                     Path(tmp) / "on.log")
        with off, on:
            stop = threading.Event()
            pollers = [
                threading.Thread(target=poll, args=(on, [f"/functions/{f}/x-vendor-graph"
                                                         for f in FUNCTIONS], stop)),
                threading.Thread(target=poll, args=(off, [f"/functions/{f}"
                                                          for f in FUNCTIONS], stop)),
            ]
            for t in pollers:
                t.start()
            try:
                assert off.proc is not None and on.proc is not None
                procs = {"off": psutil.Process(off.proc.pid), "on": psutil.Process(on.proc.pid)}
                time.sleep(WARMUP_S)
                graph = on.get("/functions/powertrain/x-vendor-graph").json()
                status = graph["x-vendor-graph"]["pipeline_status"]
                faults = [f["fault_code"] for f in on.get("/faults").json()["items"]
                          if f["fault_code"].startswith("GRAPH_")]
                ratios, shares = [], {"off": [], "on": []}
                for r in range(ROUNDS):
                    start = {k: cpu_s(p) for k, p in procs.items()}
                    t0 = time.monotonic()
                    time.sleep(WINDOW_S)
                    wall = time.monotonic() - t0
                    used = {k: cpu_s(p) - start[k] for k, p in procs.items()}
                    for k in used:
                        shares[k].append(100.0 * used[k] / wall)
                    ratios.append(used["on"] / used["off"] if used["off"] else float("nan"))
                    print(f"round {r + 1}: off {shares['off'][-1]:.1f} % of a core, "
                          f"on {shares['on'][-1]:.1f} %, ratio {ratios[-1]:.2f}", flush=True)
            finally:
                stop.set()
                for t in pollers:
                    t.join(15)
    off_pct, on_pct = statistics.median(shares["off"]), statistics.median(shares["on"])
    print(f"\ngraph+watchdog plugins: powertrain pipeline {status}, faults raised {faults}")
    print(f"gateway CPU, plugins off: {off_pct:.1f} % of a core (median of {ROUNDS} rounds "
          f"of {WINDOW_S:g} s)")
    print(f"gateway CPU, plugins on:  {on_pct:.1f} % of a core (+{on_pct - off_pct:.1f} points)")
    print(f"ratio on/off (median of per-round ratios): {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
