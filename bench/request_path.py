"""Hot GETs through the gateway against a bare aiohttp + orjson handler serving the same body.

Paths: a cached data read, GET /faults (20 faults reported first), GET /apps with the demo
robot, and one app's detail. Each gateway path and its bare twin run in alternating wrk rounds
after a warm-up; the figure is the median of the per-round throughput ratios, with the spread.

    .venv/bin/python bench/request_path.py     # ROS domain $BENCH_DOMAIN (default 97)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from bench._wrk import alternate, idle_cpu_rate, ratio_line, wrk_path  # noqa: E402
from gateway.demo.robot import Robot, ros_env  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway, enc  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "97"))
SECONDS = 3.0
ROUNDS = 5
FAULTS = 20
DATA = "/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature")
# path -> target ratio (gateway throughput / bare throughput)
PATHS = {
    "data read": (DATA, 0.9),
    "GET /faults": ("/faults", 0.8),
    "GET /apps": ("/apps", 0.9),
    "app detail": ("/apps/temp_sensor", 0.9),
}


def _report_faults(gw: Gateway, domain: int = DOMAIN) -> None:
    from tests.integration.test_faults_support import (  # noqa: PLC0415 - rclpy when reporting
        RosSide,
    )

    ros = RosSide(domain)
    try:
        reporter = ros.reporter(ros.node("bench_reporter", "/bench"))
        for i in range(FAULTS):
            reporter.report(f"BENCH_{i:02d}", 1 + i % 3, f"bench fault {i}")
        gw.wait_for("/faults", lambda b: len(b["items"]) >= FAULTS, timeout=30)
    finally:
        ros.executor.shutdown()
        ros.context.try_shutdown()


def _wait_up(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _shape(url: str) -> tuple[int, int]:
    """Body bytes and header count of one GET (both sides must serve the same)."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        return len(resp.read()), len(resp.getheaders())


def main() -> None:
    """Start the demo robot, a gateway and one bare server per path; compare them."""
    wrk_path()
    with tempfile.TemporaryDirectory() as tmp, Robot.start(DOMAIN), \
            Gateway(free_port(), DOMAIN, [f"state_dir={tmp}/state"],
                    Path(tmp) / "gateway.log") as gw:
        gw.wait_for(DATA, lambda b: b["x-vendor"]["status"] == "data", timeout=30)
        _report_faults(gw)
        # the reporter node has left: capture /apps without it, as the rounds will see it
        gw.wait_for("/apps", lambda b: all(i["id"] != "bench_reporter" for i in b["items"]),
                    timeout=30)
        bare: list[subprocess.Popen[bytes]] = []
        urls: dict[str, tuple[str, int | None]] = {}
        try:
            for label, (path, _target) in PATHS.items():
                doc = Path(tmp) / f"{len(bare)}.json"
                doc.write_text(json.dumps(gw.get(path).json()))
                port = free_port()
                bare.append(subprocess.Popen(
                    [sys.executable, str(ROOT / "bench" / "_bare.py"), str(port), str(doc)],
                    env=ros_env(DOMAIN)))
                assert gw.proc is not None
                urls[label] = (f"http://127.0.0.1:{gw.port}/api/v1{path}", gw.proc.pid)
                urls[label + " (bare)"] = (f"http://127.0.0.1:{port}/api/v1{path}",
                                           bare[-1].pid)
            for url, _pid in urls.values():
                _wait_up(url)
            shapes = {label: _shape(url) for label, (url, _pid) in urls.items()}
            assert gw.proc is not None
            idle = idle_cpu_rate(gw.proc.pid)
            try:
                results = alternate(urls, ROUNDS, SECONDS)
            except RuntimeError:
                print((Path(tmp) / "gateway.log").read_text()[-3000:])
                raise
        finally:
            for p in bare:
                p.terminate()
                p.wait(10)
    print(f"hot GETs, gateway vs bare aiohttp + orjson with the same body: wrk 1 thread, "
          f"16 connections, {ROUNDS} alternating rounds x {SECONDS:g} s, {os.cpu_count()} "
          "cores shared with everything else on this machine; verdicts use the CPU ratio")
    for label, (_path, target) in PATHS.items():
        side, base = results[label], results[label + " (bare)"]
        errors = sum(r.errors for r in side)
        print(ratio_line(label, side, base, target, side_idle=idle)
              + (f"  [{errors} errors]" if errors else ""))
        (gw_bytes, gw_headers), (bare_bytes, bare_headers) = \
            shapes[label], shapes[label + " (bare)"]
        print(f"{'':<22} answers: gateway {gw_bytes} bytes, {gw_headers} headers; bare "
              f"{bare_bytes} bytes, {bare_headers} headers")


if __name__ == "__main__":
    main()
