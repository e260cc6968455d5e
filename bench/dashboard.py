"""Dashboard first paint and page weight in headless Chromium, cold cache, on the demo.

Each round opens the dashboard in a fresh browser profile (nothing cached) and, alternating,
a bare page from the same gateway (the JSON of /api/v1/version-info, shown by Chromium's own
viewer) as the baseline. Prints first contentful paint of both, the time until the entity tree
is filled (API calls done), the median of the per-round ratios, and the page weight: bytes
transferred (compressed) and decoded for the page and its files, API answers left out.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.dashboard.assets import load, total_bytes  # noqa: E402
from gateway.demo.robot import Robot  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.e2e.browser import Browser  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = int(os.environ.get("DASH_BENCH_DOMAIN", "66"))
ROUNDS = 3
NODES = ("temp_sensor", "lidar_sensor", "calibration", "long_calibration")

PAINT = "return performance.getEntriesByType('paint').map(e => [e.name, e.startTime])"
WEIGHT = """return [performance.getEntriesByType('navigation')[0]]
  .concat(performance.getEntriesByType('resource'))
  .filter(e => !new URL(e.name).pathname.startsWith('/api/'))
  .map(e => [new URL(e.name).pathname, e.transferSize, e.encodedBodySize, e.decodedBodySize])"""


def first_paint(url: str, ready_css: str | None) -> tuple[float, float | None, list[list]]:
    """(first contentful paint ms, ms until ready_css shows, weight rows) in a fresh profile."""
    b = Browser()
    try:
        b.open(url)
        ready = None
        if ready_css:
            b.css(ready_css, "the page to be filled")
            ready = b.driver.execute_script("return performance.now()")
        b.wait(lambda d: dict(d.execute_script(PAINT)).get("first-contentful-paint"),
               "first contentful paint")
        fcp = dict(b.driver.execute_script(PAINT))["first-contentful-paint"]
        return fcp, ready, b.driver.execute_script(WEIGHT)
    finally:
        b.close()


FLEET_RENDER = """
const done = arguments[arguments.length - 1];
import('/dashboard/js/fleet.js').then(({drawRobots, drawFaults}) => {
  const xv = 'x-vendor';
  const peers = Array.from({length: 32}, (_, i) => ({name: 'robot' + i, url: 'http://10.0.0.' + i,
    status: i % 5 ? 'online' : 'offline', [xv]: {status_since: new Date().toISOString()}}));
  const faults = Array.from({length: 32 * 40}, (_, i) => ({fault_code: 'F' + i, severity: ['ERROR', 'WARN', 'INFO'][i % 3],
    message: 'message ' + i, source: '/robot/node' + (i % 7), timestamp: new Date().toISOString(),
    [xv]: {status: 'CONFIRMED', peer: 'robot' + (i % 32)}}));
  const cards = document.createElement('div'), list = document.createElement('div');
  document.body.append(cards, list);
  const times = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    drawRobots(cards, {status: 'healthy', peers}, faults);
    drawFaults(list, faults);
    cards.getBoundingClientRect();  // include layout
    times.push(performance.now() - t0);
  }
  done(times);
}, (e) => done(String(e)));"""


def fleet_render(url: str) -> list[float]:
    """ms to draw 32 robot cards and 1280 faults, 5 times, in the loaded page."""
    b = Browser()
    try:
        b.open(url)
        b.css("#tree a", "the page")
        b.driver.set_script_timeout(60)
        return [float(t) for t in b.driver.execute_async_script(FLEET_RENDER)]
    finally:
        b.close()


def main() -> None:
    """Run the rounds and print the figures."""
    with tempfile.TemporaryDirectory() as tmp, Robot.start(DOMAIN, nodes=NODES):
        gw = Gateway(free_port(), DOMAIN, [f"state_dir={tmp}"]).start(60)
        try:
            gw.wait_for("/apps", lambda b: len(b["items"]) >= len(NODES), 60)
            base = f"http://127.0.0.1:{gw.port}"
            dash, bare, ready, ratios = [], [], [], []
            weight: list[list] = []
            for _ in range(ROUNDS):
                fcp, filled, weight = first_paint(base + "/", '#tree a[data-entity^="apps/"]')
                ref, _, _ = first_paint(base + "/api/v1/version-info", None)
                dash.append(fcp)
                bare.append(ref)
                ready.append(filled or 0.0)
                ratios.append(fcp / ref)
            render = fleet_render(base + "/")
        finally:
            gw.stop()
    sent = sum(r[1] for r in weight)
    decoded = sum(r[3] for r in weight)
    print(f"dashboard first contentful paint, cold cache: median {statistics.median(dash):.0f} ms "
          f"(rounds: {', '.join(f'{v:.0f}' for v in dash)})")
    print(f"bare JSON page first paint (baseline):        median {statistics.median(bare):.0f} ms")
    print(f"ratio dashboard/bare, median of rounds: {statistics.median(ratios):.2f}")
    print(f"entity tree filled (all API calls answered): median {statistics.median(ready):.0f} ms")
    print(f"32 robot cards and a list of 1280 faults drawn (with layout): median "
          f"{statistics.median(render):.0f} ms of {len(render)} redraws")
    print(f"page weight: {len(weight)} files, {sent} bytes transferred, {decoded} bytes decoded "
          f"({total_bytes(load())} bytes shipped in the package)")


if __name__ == "__main__":
    main()
