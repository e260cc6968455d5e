"""Idle robots: the CPU of a robot's gateway idle in a fleet with its primary connected.

A lab of namespaced hosts (tests/fleet/lab.py; root): each robot its own host on ROS domain 0
with two demo nodes and its gateway, behind its link emulator; two primaries, each with half
of the robots as static peers. One half runs as this build does by default (an idle graph
watched through the node's graph guard condition and polled every
discovery.watched_idle_poll_interval_ms; the primary follows the peer's beacon); the other
half as the build did before (graph every 200 ms, unwatched; a /health probe every 500 ms and
a conditional refresh every second), the baseline, measured in the same windows on the same
loaded machine. Printed: each robot's gateway CPU (ms per s over the window, from the
threads' schedstat run times in ns), the medians of both halves, their ratio, the primaries'
CPU, and where one new robot's CPU went per thread. Target: <= 3 ms/s.

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


def threads_s(pid: int) -> dict[tuple[str, str], float]:
    """CPU seconds of each live thread of a process, by (tid, name), from schedstat (ns)."""
    out = {}
    for tid in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (tid / "comm").read_text().strip()
            out[(tid.name, name)] = int((tid / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue  # the thread ended
    return out


def cpu_s(pid: int) -> float:
    """CPU seconds of a process (its live threads; an idle gateway's threads stay)."""
    return sum(threads_s(pid).values())


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
        per_thread: dict[str, float] = {}  # one new robot's gateway, ms/s by thread name
        for _ in range(args.rounds):
            pids = {h: [r.gateway.pid for r in robots[h] if r.gateway] for h in halves}
            before = {h: [cpu_s(p) for p in pids[h]] for h in halves}
            split = threads_s(pids["new"][0])
            pbefore = {h: cpu_s(primaries[h].pid) for h in halves}
            t0 = time.monotonic()
            time.sleep(args.seconds)
            dt = time.monotonic() - t0
            after = threads_s(pids["new"][0])
            for key, s in after.items():
                name = key[1] if key[1] != "python" or key[0] != str(pids["new"][0]) else "main"
                per_thread[name] = per_thread.get(name, 0.0) + (s - split.get(key, 0.0)) \
                    * 1e3 / dt / args.rounds
            for h in halves:
                rates[h] += [(cpu_s(p) - b) * 1e3 / dt for p, b in zip(pids[h], before[h],
                                                                        strict=True)]
                prim[h].append((cpu_s(primaries[h].pid) - pbefore[h]) * 1e3 / dt)
        for h in halves:
            print(f"{h:>3} robots' gateways (ms/s): "
                  + ", ".join(f"{x:.2f}" for x in rates[h])
                  + f"; primary {statistics.median(prim[h]):.2f} ms/s for {args.robots} robots")
        top = sorted(per_thread.items(), key=lambda kv: -kv[1])
        print("one new robot's gateway by thread (ms/s; python: threads Python names): "
              + ", ".join(f"{n} {v:.2f}" for n, v in top if v >= 0.01))
        new, old = statistics.median(rates["new"]), statistics.median(rates["old"])
        print(f"idle robot gateway, median: {new:.2f} ms/s (target <= {TARGET_MS_PER_S}); "
              f"before: {old:.2f} ms/s; ratio {new / old:.2f}")


if __name__ == "__main__":
    main()
