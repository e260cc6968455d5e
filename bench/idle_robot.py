"""Idle robots: the CPU of a robot's gateway idle in a fleet with its primary connected.

A lab of namespaced hosts (tests/fleet/lab.py; root): each robot its own host on ROS domain 0
with two demo nodes and its gateway, behind its link emulator; two primaries, each with half
of the robots as static peers. One half runs as this build does by default (graph polled
every discovery.idle_poll_interval_ms once idle; the primary follows the peer's beacon); the
other half as the build did before (graph every 200 ms; a /health probe every 500 ms and a
conditional refresh every second), the baseline, measured in the same windows on the same
loaded machine. Printed: each robot's gateway CPU (ms per s, /proc over the window), the
medians of both halves, their ratio, and the primaries' CPU. Target: <= 3 ms/s.

Usage: python bench/idle_robot.py [--robots 2] [--seconds 20] [--rounds 2]   (as root)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fleet.lab import (  # noqa: E402
    Lab,
    LabRobot,
    gateway_argv,
    host_env,
    lab_unusable,
    wait_until,
)

TARGET_MS_PER_S = 3.0
OLD = {"robot": ["discovery.idle_poll_interval_ms=0"], "primary": ["aggregation.beacon=false"]}
NEW: dict[str, list[str]] = {"robot": [], "primary": []}


def cpu_s(pid: int) -> float:
    """CPU seconds of a process (all threads) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    import os

    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def health(address: str, port: int) -> dict[str, object]:
    with urllib.request.urlopen(f"http://{address}:{port}/api/v1/health", timeout=5) as f:
        return json.loads(f.read())  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", type=int, default=2, help="robots per half")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dds-default", action="store_true",
                    help="robots without the demo's Fast DDS profile (lease announced every "
                         "second): Fast DDS's defaults, as on a robot without that profile")
    args = ap.parse_args()
    why = lab_unusable()
    if why:
        sys.exit(f"cannot run the lab: {why}")
    logs = Path(tempfile.mkdtemp(prefix="idle-robot-"))
    halves = {"new": NEW, "old": OLD}
    names = {h: [f"{h}{k}" for k in range(args.robots)] for h in halves}
    with Lab(["pnew", "pold", *names["new"], *names["old"]]) as lab:
        robots = {h: [LabRobot(lab[n], logs).start(halves[h]["robot"],
                                                   dds_profile=not args.dds_default)
                      for n in names[h]] for h in halves}
        for half in robots.values():
            for r in half:
                wait_until(lambda r=r: health(r.host.address, 8080), 120, r.host.name)
        primaries = {}
        for h, cfg in halves.items():
            urls = ",".join(r.url for r in robots[h])
            host = lab[f"p{h}"]
            primaries[h] = host.run(gateway_argv("0.0.0.0", 8080, [
                "aggregation.enabled=true", f"aggregation.peer_urls=[{urls}]",
                f"aggregation.peer_names=[{','.join(names[h])}]",
                f"state_dir={logs / ('p' + h)}", *cfg["primary"]]),
                logs / f"p{h}.log", host_env())
            wait_until(lambda host=host: health(host.address, 8080)["peers"] and all(
                p["status"] == "online" for p in health(host.address, 8080)["peers"]),
                120, f"p{h}'s robots online")
        print("settling (graphs idle for 10 s, beacons open) ...", flush=True)
        time.sleep(15)
        rates: dict[str, list[float]] = {h: [] for h in halves}
        prim: dict[str, list[float]] = {h: [] for h in halves}
        for _ in range(args.rounds):
            pids = {h: [r.gateway.pid for r in robots[h] if r.gateway] for h in halves}
            before = {h: [cpu_s(p) for p in pids[h]] for h in halves}
            pbefore = {h: cpu_s(primaries[h].pid) for h in halves}
            t0 = time.monotonic()
            time.sleep(args.seconds)
            dt = time.monotonic() - t0
            for h in halves:
                rates[h] += [(cpu_s(p) - b) * 1e3 / dt for p, b in zip(pids[h], before[h],
                                                                        strict=True)]
                prim[h].append((cpu_s(primaries[h].pid) - pbefore[h]) * 1e3 / dt)
        for h in halves:
            print(f"{h:>3} robots' gateways (ms/s): "
                  + ", ".join(f"{x:.2f}" for x in rates[h])
                  + f"; primary {statistics.median(prim[h]):.2f} ms/s for {args.robots} robots")
        new, old = statistics.median(rates["new"]), statistics.median(rates["old"])
        print(f"idle robot gateway, median: {new:.2f} ms/s (target <= {TARGET_MS_PER_S}); "
              f"before: {old:.2f} ms/s; ratio {new / old:.2f}")


if __name__ == "__main__":
    main()
