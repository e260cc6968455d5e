"""Event-loop CPU per hot GET: the gateway's request path against the bare handler, in-process.

The wrk benchmark (request_path.py) charges each side its whole process CPU, which on a busy
machine is dominated by the gateway's background threads (ROS executor, graph poll). This one
measures what the request path itself costs: both apps run in this process behind aiohttp's
own protocol handler, fed the request bytes wrk sends (one connection, keep-alive), and the
figure is the event-loop thread's CPU time (time.thread_time) per answered request; sockets
and other threads are left out. Rounds alternate; the ratio is bare / gateway per round.

    .venv/bin/python bench/request_path_cpu.py     # ROS domain $BENCH_DOMAIN (default 96)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from bench._wrk import spread  # noqa: E402
from bench.request_path import DATA, FAULTS, PATHS  # noqa: E402
from gateway.app import make_app  # noqa: E402
from gateway.demo.robot import Robot, ros_env  # noqa: E402
from gateway.http.server import GatewayRunner  # noqa: E402
from gateway.settings.config import load  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "96"))
REQUESTS = 4000
ROUNDS = 5


class _Transport(asyncio.Transport):
    """Collects what the protocol writes; wakes the driver when an answer is out."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[bytes] = []
        self.waiter: asyncio.Future[None] | None = None
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8080)}.get(
            name, default)

    def write(self, data: Any) -> None:
        self.out.append(bytes(data))
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_write_buffer_size(self) -> int:
        return 0


async def drive(server: Any, path: str, n: int) -> tuple[float, bytes]:
    """n keep-alive GETs of path; event-loop CPU us per request, and the last answer."""
    loop = asyncio.get_running_loop()
    proto = server()
    transport = _Transport()
    proto.connection_made(transport)
    request = f"GET /api/v1{path} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n".encode()
    start = time.thread_time()
    for _ in range(n):
        transport.waiter = loop.create_future()
        transport.out.clear()
        proto.data_received(request)
        await transport.waiter
    used = time.thread_time() - start
    answer = b"".join(transport.out)
    proto.connection_lost(None)
    return used / n * 1e6, answer


async def bare_server(body: bytes) -> Any:
    """bench/_bare.py's handler (orjson.dumps of the document per request), same body."""
    doc = orjson.loads(body)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(doc), content_type="application/json")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    return runner


async def _report_faults(gateway: Any) -> None:
    """FAULTS faults reported, as request_path.py does; the reporter node gone again."""
    from tests.integration.test_faults_support import (  # noqa: PLC0415 - rclpy when reporting
        RosSide,
    )

    async def body(path: str) -> Any:
        return orjson.loads((await drive(gateway, path, 1))[1].split(b"\r\n\r\n", 1)[1])

    ros = RosSide(DOMAIN)
    try:
        reporter = ros.reporter(ros.node("bench_reporter", "/bench"))
        for i in range(FAULTS):
            reporter.report(f"BENCH_{i:02d}", 1 + i % 3, f"bench fault {i}")
        while len((await body("/faults"))["items"]) < FAULTS:
            await asyncio.sleep(0.2)
    finally:
        ros.executor.shutdown()
        ros.context.try_shutdown()
    while any(a["id"] == "bench_reporter" for a in (await body("/apps"))["items"]):
        await asyncio.sleep(0.2)


async def measure() -> None:
    """Gateway (the cli's runner) and bare apps in this process; alternating rounds."""
    tmp = tempfile.mkdtemp()
    settings = load(None, [f"ros.domain_id={DOMAIN}", f"state_dir={tmp}/state"])
    runner = GatewayRunner(make_app(settings), settings.vendor, access_log=None)
    await runner.setup()
    gateway = runner.server
    deadline = time.monotonic() + 60
    while b'"status":"data"' not in (await drive(gateway, DATA, 1))[1]:
        if time.monotonic() > deadline:
            raise SystemExit("no sample of the data topic within 60 s")
        await asyncio.sleep(0.2)
    await _report_faults(gateway)
    bares = {}
    for label, (path, _target) in PATHS.items():
        answer = (await drive(gateway, path, 1))[1]
        bares[label] = await bare_server(answer.split(b"\r\n\r\n", 1)[1])
        await drive(gateway, path, 500)  # warm-up
        await drive(bares[label].server, path, 500)
    results: dict[str, list[tuple[float, float]]] = {label: [] for label in PATHS}
    for _ in range(ROUNDS):
        for label, (path, _target) in PATHS.items():
            side = (await drive(gateway, path, REQUESTS))[0]
            base = (await drive(bares[label].server, path, REQUESTS))[0]
            results[label].append((side, base))
    print(f"hot GETs in-process, event-loop thread CPU per request, gateway vs bare aiohttp + "
          f"orjson with the same body: {ROUNDS} alternating rounds x {REQUESTS} requests")
    for label, (_path, target) in PATHS.items():
        ratios = [b / s for s, b in results[label]]
        verdict = "met" if statistics.median(ratios) >= target else "NOT met"
        print(f"{label:<14} {statistics.median(s for s, _ in results[label]):6.1f} us vs bare "
              f"{statistics.median(b for _, b in results[label]):6.1f} us: CPU ratio "
              f"{spread(ratios)}; target >= {target:g}: {verdict}")
    await runner.cleanup()
    for bare in bares.values():
        await bare.cleanup()


def main() -> None:
    """Start the demo robot, then measure."""
    os.environ.update(ros_env(DOMAIN))
    with Robot.start(DOMAIN):
        asyncio.run(measure())


if __name__ == "__main__":
    main()
