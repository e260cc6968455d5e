"""Cached data read through the gateway against a bare aiohttp + orjson handler, same body.

Prints requests/s and p50/p99 of both, and the ratio (goal: gateway >= 0.75 of bare).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._load import run_load  # noqa: E402
from gateway.demo.robot import Robot, ros_env  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway, enc  # noqa: E402

DOMAIN = 97
SECONDS = 4.0
ROUNDS = 2
PATH = "/api/v1/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature")


def main() -> None:
    """Run the comparison and print the figures."""
    with tempfile.TemporaryDirectory() as tmp, \
            Robot.start(DOMAIN, nodes=("temp_sensor",)), \
            Gateway(free_port(), DOMAIN) as gw:
        gw.wait_for("/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature"),
                    lambda b: b["x-vendor"]["status"] == "data")
        body = gw.get(PATH[len("/api/v1"):]).json()
        doc = Path(tmp) / "body.json"
        doc.write_text(json.dumps(body))
        port = free_port()
        bare = subprocess.Popen([sys.executable, str(ROOT / "bench" / "_bare.py"), str(port),
                                 str(doc)], env=ros_env(DOMAIN))
        try:
            time.sleep(1.0)
            results: dict[str, list] = {"gateway": [], "bare": []}
            asyncio.run(run_load("127.0.0.1", gw.port, PATH, 1.0))  # warm-up
            asyncio.run(run_load("127.0.0.1", port, PATH, 1.0))
            for _ in range(ROUNDS):
                results["gateway"].append(asyncio.run(run_load("127.0.0.1", gw.port, PATH,
                                                               SECONDS)))
                results["bare"].append(asyncio.run(run_load("127.0.0.1", port, PATH, SECONDS)))
        finally:
            bare.terminate()
            bare.wait(10)
    g = max(results["gateway"], key=lambda r: r.rps)
    b = max(results["bare"], key=lambda r: r.rps)
    print(f"cached data read, {len(json.dumps(body))} byte body, 16 connections, "
          f"best of {ROUNDS} x {SECONDS:g} s")
    print(g.line("gateway GET .../data/{topic}"))
    print(b.line("bare aiohttp + orjson (baseline)"))
    print(f"ratio gateway/bare: {g.rps / b.rps:.2f} (goal >= 0.75)")


if __name__ == "__main__":
    main()
