"""The fleet merge's growth: gateway/federation/fleet.py's merge of N robots' entity sets, each
robot with two apps on one host component and in two functions every robot shares.

Printed: the best of five merges at each size, its cost per robot, and the per-robot cost at
the largest size against the smallest in the same run (1.0 is linear; the list scan per host
the merge used before gave about 3 at 1,000 against 100).

Usage: python bench/fleet_merge.py [--sizes 100,300,1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.federation.fleet import PeerSet, merge
from gateway.model.entities import Entity, EntitySet


def fleet(n: int) -> list[PeerSet]:
    """n robots: lidar<i> and temp<i> on component host, in functions perception and
    powertrain."""
    peers = []
    for i in range(n):
        es = EntitySet()
        apps = [f"lidar{i}", f"temp{i}"]
        es.components["host"] = Entity("components", "host", "host", hosts=list(apps))
        for f in ("perception", "powertrain"):
            es.functions[f] = Entity("functions", f, f, hosts=list(apps))
        for a in apps:
            es.apps[a] = Entity("apps", a, a, node_fqn=f"/robot/{a}", component="host")
        peers.append(PeerSet(f"r{i}", es, True))
    return peers


def best_of(peers: list[PeerSet], rounds: int = 5) -> float:
    """CPU seconds of the fastest of `rounds` merges (CPU time: a busy machine preempts a long
    merge more often than a short one, which wall time would count as growth)."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        merge(EntitySet(), peers, 1)
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,300,1000")
    sizes = [int(s) for s in ap.parse_args().sizes.split(",")]
    per_robot = {}
    for n in sizes:
        s = best_of(fleet(n))
        per_robot[n] = s / n
        print(f"{n:6d} robots: merge {s * 1000:8.2f} ms, {s / n * 1e6:6.1f} µs per robot")
    lo, hi = min(sizes), max(sizes)
    print(f"per-robot cost at {hi} against {lo}: {per_robot[hi] / per_robot[lo]:.2f} "
          "(1.0 is linear)")


if __name__ == "__main__":
    main()
