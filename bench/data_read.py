"""Cached data read through the gateway against a bare aiohttp + orjson handler, same body.

Prints requests/s and p50/p99 of both, and the ratio (goal: gateway >= 0.75 of bare). The two
servers are loaded in alternating rounds after a warm-up; the ratio is taken from each one's
best round and, as a check on noise, the median of the per-round ratios is printed too.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._load import LoadResult, run_load  # noqa: E402
from gateway.demo.robot import Robot, ros_env  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway, enc  # noqa: E402

DOMAIN = 97
SECONDS = 3.0
ROUNDS = 4
PATH = "/api/v1/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature")


def _load(port: int, seconds: float) -> LoadResult:
    return asyncio.run(run_load("127.0.0.1", port, PATH, seconds))


def main() -> None:
    """Run the comparison and print the figures."""
    with tempfile.TemporaryDirectory() as tmp, \
            Robot.start(DOMAIN, nodes=("temp_sensor",)), \
            Gateway(free_port(), DOMAIN, [f"state_dir={tmp}/state"]) as gw:
        gw.wait_for(PATH[len("/api/v1"):], lambda b: b["x-vendor"]["status"] == "data")
        body = gw.get(PATH[len("/api/v1"):]).json()
        doc = Path(tmp) / "body.json"
        doc.write_text(json.dumps(body))
        port = free_port()
        bare = subprocess.Popen([sys.executable, str(ROOT / "bench" / "_bare.py"), str(port),
                                 str(doc)], env=ros_env(DOMAIN))
        try:
            time.sleep(1.0)
            for target in (gw.port, port, gw.port, port):  # warm both up
                _load(target, 1.0)
            pairs = [(_load(gw.port, SECONDS), _load(port, SECONDS)) for _ in range(ROUNDS)]
        finally:
            bare.terminate()
            bare.wait(10)
    g = max((p[0] for p in pairs), key=lambda r: r.rps)
    b = max((p[1] for p in pairs), key=lambda r: r.rps)
    per_round = [p[0].rps / p[1].rps for p in pairs]
    print(f"cached data read, {len(json.dumps(body))} byte body, 16 connections, "
          f"best of {ROUNDS} alternating rounds x {SECONDS:g} s")
    print(g.line("gateway GET .../data/{topic}"))
    print(b.line("bare aiohttp + orjson (baseline)"))
    print(f"ratio gateway/bare: {g.rps / b.rps:.2f} (goal >= 0.75); median of per-round "
          f"ratios {statistics.median(per_round):.2f} "
          f"(rounds: {' '.join(f'{r:.2f}' for r in per_round)})")


if __name__ == "__main__":
    main()
