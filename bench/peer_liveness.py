"""Peer liveness: how fast a primary sees a stopped peer offline and a resumed one back.

One peer gateway and one primary with it as a static peer (no robot: liveness is the peer's
own /health). Each round SIGSTOPs the peer and times until the primary's /health says
offline, then SIGCONTs it and times until online, polling every 20 ms. A round starts at a
random phase of the probe interval (aggregation.health_interval_ms). Printed: each round's
figures, min and max. Targets: offline within 1.5 s, back online within 0.5 s.

Usage: python bench/peer_liveness.py [--rounds N]   (ROS domain $BENCH_DOMAIN; default 78)
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "78"))
OFFLINE_TARGET_S = 1.5
ONLINE_TARGET_S = 0.5


def until(gw: Gateway, status: str, timeout: float = 30.0) -> float:
    """Seconds until the primary's /health shows the peer with this status."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        peers = {p["name"]: p["status"] for p in gw.get("/health").json()["peers"]}
        if peers.get("peer") == status:
            return time.monotonic() - t0
        time.sleep(0.02)
    return float("inf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="liveness-bench-"))
    peer = Gateway(free_port(), DOMAIN, [f"state_dir={logs / 'peer'}"], logs / "peer.log")
    primary = Gateway(free_port(), DOMAIN, [
        "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{peer.port}]",
        "aggregation.peer_names=[peer]", f"state_dir={logs / 'primary'}"], logs / "primary.log")
    peer.start(timeout=60)
    try:
        primary.start(timeout=60)
        assert until(primary, "online", 60) < 60, "the peer never came online"
        pid = peer.proc.pid  # type: ignore[union-attr]
        stop, cont = [], []
        for _ in range(args.rounds):
            time.sleep(1.0 + random.random())  # a random phase of the probe interval
            os.kill(pid, signal.SIGSTOP)
            try:
                stop.append(until(primary, "offline"))
            finally:
                os.kill(pid, signal.SIGCONT)
            cont.append(until(primary, "online"))

        def fmt(xs: list[float]) -> str:
            return ", ".join(f"{x:.2f}" for x in xs) + f"  ({min(xs):.2f}-{max(xs):.2f} s)"
        print(f"stopped (SIGSTOP) -> offline: {fmt(stop)}  target {OFFLINE_TARGET_S} s")
        print(f"resumed (SIGCONT) -> online:  {fmt(cont)}  target {ONLINE_TARGET_S} s")
    finally:
        primary.stop()
        peer.stop()


if __name__ == "__main__":
    main()
