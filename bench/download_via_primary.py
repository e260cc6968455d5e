"""A download through a primary against the same download straight from the robot, same link.

A robot gateway (the demo's temp_sensor, a file of --size-mb uploaded to it as bulk-data)
sits behind an emulated link (tests/fleet/linkemu.py: --rtt-ms, --rate-bps). A primary has it
as a static peer through that link; a hub is dialed by the robot (aggregation.connect_to)
through a twin link of the same figures (--no-dial-in skips it). Each round downloads the file
straight through the link (the baseline), then through the primary, then through the hub,
each on a client connection that has just made a small request (and so has the primary's
pooled connection to the robot: a primary in use keeps one). Printed per round and as medians:
link utilisation (body bytes per second over the link's rate, from the request to the last
byte), time to the status line and headers against the RTT, and each forwarded download's
throughput as a ratio of the baseline's. Figures only; no target is asserted.

Usage: python bench/download_via_primary.py [--rtt-ms 80] [--rate-bps 4000000]
           [--size-mb 4] [--rounds 3] [--no-dial-in]      (ROS domain $BENCH_DOMAIN; default 87)
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from gateway.demo.robot import Robot  # noqa: E402
from gateway.federation.connect_auth import robot_token  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.fleet.linkemu import running  # noqa: E402
from tests.harness import Gateway  # noqa: E402
from tests.integration.test_bulk_data import multipart  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "87"))
APP = "temp_sensor"
SECRET = "download-bench-" + str(os.getpid())


@contextmanager
def link(logs: Path, name: str, target: int, rtt_ms: float, rate_bps: float
         ) -> Iterator[int]:
    """An emulated link to 127.0.0.1:target; its listening port."""
    port = free_port()
    with running(logs, name, port, target, "--rtt-ms", str(rtt_ms), "--rate-bps",
                 str(rate_bps)):
        yield port


class Figures:
    """One download: seconds to the headers and to the last byte, bytes, status."""

    def __init__(self, headers_s: float, total_s: float, size: int, status: int) -> None:
        self.headers_s, self.total_s, self.size, self.status = headers_s, total_s, size, status

    def utilisation(self, rate_bps: float) -> float:
        return self.size * 8 / rate_bps / self.total_s


def download(port: int, path: str, warm: str, expect: bytes) -> Figures:
    """GET path on a connection that has just answered GET warm (kept alive)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", "/api/v1" + warm)
        conn.getresponse().read()
        t0 = time.monotonic()
        conn.request("GET", "/api/v1" + path)
        resp = conn.getresponse()
        headers_s = time.monotonic() - t0
        body = resp.read()
        total_s = time.monotonic() - t0
    finally:
        conn.close()
    if body != expect:
        print(f"  body differs from the file: {len(body)} of {len(expect)} bytes", flush=True)
    return Figures(headers_s, total_s, len(body), resp.status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtt-ms", type=float, default=80.0)
    ap.add_argument("--rate-bps", type=float, default=4_000_000)
    ap.add_argument("--size-mb", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-dial-in", action="store_true", help="no hub dialed by the robot")
    args = ap.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="download-bench-"))
    rtt_s, rate = args.rtt_ms / 1000, args.rate_bps
    robot_port, hub_port = free_port(), free_port()
    with ExitStack() as stack:
        stack.enter_context(Robot.start(DOMAIN, nodes=(APP,), log_dir=logs))
        direct = stack.enter_context(link(logs, "link", robot_port, args.rtt_ms, rate))
        settings = [f"state_dir={logs / 'robot'}", "bulk_data.categories=[files]"]
        if not args.no_dial_in:
            twin = stack.enter_context(link(logs, "twin", hub_port, args.rtt_ms, rate))
            settings += ["aggregation.mdns_name=robot1",
                         f"aggregation.connect_to=http://127.0.0.1:{twin}",
                         f"aggregation.connect_robot_token={robot_token(SECRET, 'robot1')}"]
            hub = stack.enter_context(Gateway(hub_port, DOMAIN + 2, [
                f"state_dir={logs / 'hub'}", "aggregation.enabled=true",
                f"aggregation.connect_token={SECRET}"], logs / "hub.log"))
        robot = stack.enter_context(Gateway(robot_port, DOMAIN, settings, logs / "robot.log"))
        primary = stack.enter_context(Gateway(free_port(), DOMAIN + 1, [
            f"state_dir={logs / 'primary'}", "aggregation.enabled=true",
            f"aggregation.peer_urls=[http://127.0.0.1:{direct}]",
            "aggregation.peer_names=[robot1]"], logs / "primary.log"))
        ways = {"direct": direct, "primary": primary.port}
        if not args.no_dial_in:
            ways["dial-in hub"] = hub.port
        for gw in ([primary] + ([hub] if not args.no_dial_in else [])):
            gw.wait_for("/apps", lambda b: any(a["id"] == APP for a in b["items"]), 120)
        data = os.urandom(int(args.size_mb * 1e6))
        body, ctype = multipart(("file", "rec.bin", "application/octet-stream", data))
        up = robot.request("POST", f"/apps/{APP}/bulk-data/files", raw=body,
                           headers={"Content-Type": ctype}, timeout=120)
        assert up.status == 201, up
        path = f"/apps/{APP}/bulk-data/files/{up.json()['id']}"
        warm = f"/apps/{APP}/bulk-data/files"  # forwarded by the primaries too
        print(f"link: RTT {args.rtt_ms:.0f} ms, {rate / 1e6:g} Mbit/s; file {len(data)} bytes "
              f"(ideal {len(data) * 8 / rate:.2f} s at the link's rate); logs {logs}",
              flush=True)
        runs: dict[str, list[Figures]] = {w: [] for w in ways}
        for k in range(args.rounds):
            for way, port in ways.items():
                f = download(port, path, warm, data)
                runs[way].append(f)
                ratio = f.utilisation(rate) / runs["direct"][-1].utilisation(rate)
                print(f"round {k + 1} {way:>12}: status {f.status}, {f.total_s:.2f} s, "
                      f"{f.utilisation(rate):.1%} of the link, headers after "
                      f"{f.headers_s * 1e3:.0f} ms ({f.headers_s / rtt_s:.2f} RTT), "
                      f"{ratio:.3f} of direct", flush=True)
        base = statistics.median(f.utilisation(rate) for f in runs["direct"])
        for way, figs in runs.items():
            util = statistics.median(f.utilisation(rate) for f in figs)
            head = statistics.median(f.headers_s for f in figs)
            print(f"median {way:>12}: {util:.1%} of the link, headers after {head * 1e3:.0f} ms "
                  f"({head / rtt_s:.2f} RTT), {util / base:.3f} of direct", flush=True)


if __name__ == "__main__":
    main()
