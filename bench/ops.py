"""Service calls through the gateway against direct rclpy calls, and /health while calls hang.

Prints calls/s of `POST .../operations/calibrate/executions` and of direct rclpy `call_async`
on the same service (both with 8 calls in flight, in the same run), their ratio, and /health
p50/p99 alone and while 20 parameter requests to the never-answering node are outstanding.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from bench._load import LoadResult, run_load  # noqa: E402
from gateway.demo.robot import Robot  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = int(os.environ.get("DIAG_BENCH_DOMAIN", "98"))
SECONDS = 4.0
ROUNDS = 2
IN_FLIGHT = 8
HUNG = 20
HANG_TIMEOUT_S = 10.0
# The lidar's Trigger service: its server does not log per call, so the gateway's own cost shows.
SERVICE = "/perception/lidar/calibrate"
CALL_PATH = "/api/v1/apps/lidar_sensor/operations/calibrate/executions"
HUNG_PATH = "/api/v1/apps/unresponsive_param/configurations"


async def gateway_calls(port: int, seconds: float) -> LoadResult:
    """Service calls through the gateway over IN_FLIGHT keep-alive connections."""
    return await run_load("127.0.0.1", port, CALL_PATH, seconds, connections=IN_FLIGHT,
                          method="POST", body=b"{}")


class DirectClient:
    """A plain rclpy client keeping IN_FLIGHT calls outstanding (the baseline)."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=DOMAIN)
        self.node = rclpy.create_node("_bench_direct", context=self.context)
        self.client = self.node.create_client(Trigger, SERVICE)
        self.request = Trigger.Request()
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.running = True
        self.thread.start()

    def _spin(self) -> None:
        while self.running and self.context.ok():
            self.executor.spin_once(timeout_sec=0.05)

    def run(self, seconds: float) -> LoadResult:
        """Calls/s with IN_FLIGHT outstanding for `seconds`."""
        while not self.client.service_is_ready():
            time.sleep(0.05)
        lat: list[float] = []
        counts = [0, 0]
        done = threading.Event()
        stop_at = time.perf_counter() + seconds
        lock = threading.Lock()
        active = [IN_FLIGHT]

        def issue() -> None:
            t0 = time.perf_counter()
            fut = self.client.call_async(self.request)

            def finished(f: object) -> None:
                lat.append((time.perf_counter() - t0) * 1000.0)
                counts[0] += 1
                if time.perf_counter() < stop_at:
                    issue()
                else:
                    with lock:
                        active[0] -= 1
                        if active[0] == 0:
                            done.set()

            fut.add_done_callback(finished)

        t0 = time.perf_counter()
        for _ in range(IN_FLIGHT):
            issue()
        done.wait(seconds + 10.0)
        return LoadResult(counts[0], counts[1], time.perf_counter() - t0, lat)

    def close(self) -> None:
        """Stop spinning and shut the context down."""
        self.running = False
        self.thread.join(2.0)
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


async def hung_calls(port: int) -> list[int]:
    """Start HUNG parameter listings of the silent node; returns their statuses when done."""

    async def one() -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {HUNG_PATH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                     .encode())
        head = await reader.readuntil(b"\r\n\r\n")
        writer.close()
        return int(head[9:12])

    return list(await asyncio.gather(*(one() for _ in range(HUNG))))


async def health_while_hung(port: int, seconds: float) -> tuple[LoadResult, list[int], float]:
    """/health load while HUNG calls are outstanding; (load, hung statuses, hung seconds)."""
    t0 = time.perf_counter()
    hung = asyncio.ensure_future(hung_calls(port))
    await asyncio.sleep(0.3)  # let every hung request reach the gateway
    load = await run_load("127.0.0.1", port, "/api/v1/health", seconds, connections=4)
    assert not hung.done(), "the hung calls ended before the /health load did"
    statuses = await hung
    return load, statuses, time.perf_counter() - t0


def main() -> None:
    """Run the comparison and print the figures."""
    settings = [f"parameter_service_timeout_sec={HANG_TIMEOUT_S}",
                "parameter_negative_cache_sec=0", f"service_call_timeout_sec={HANG_TIMEOUT_S}"]
    with Robot.start(DOMAIN, nodes=("lidar_sensor", "unresponsive_param")), \
            Gateway(free_port(), DOMAIN, settings) as gw:
        gw.wait_for("/apps", lambda b: {"lidar_sensor", "unresponsive_param"}
                    <= {i["id"] for i in b["items"]}, timeout=20)
        direct = DirectClient()
        try:
            asyncio.run(gateway_calls(gw.port, 1.0))  # warm-up
            direct.run(1.0)
            gws, directs = [], []
            for _ in range(ROUNDS):
                gws.append(asyncio.run(gateway_calls(gw.port, SECONDS)))
                directs.append(direct.run(SECONDS))
        finally:
            direct.close()
        alone = asyncio.run(run_load("127.0.0.1", gw.port, "/api/v1/health", 3.0,
                                     connections=4))
        hung_load, statuses, hung_s = asyncio.run(health_while_hung(gw.port, 3.0))
    g = max(gws, key=lambda r: r.rps)
    d = max(directs, key=lambda r: r.rps)
    print(f"service calls to {SERVICE} (std_srvs/Trigger), {IN_FLIGHT} in flight, "
          f"best of {ROUNDS} x {SECONDS:g} s")
    print(g.line("gateway POST .../executions"))
    print(d.line("direct rclpy call_async (baseline)"))
    print(f"ratio gateway/direct: {g.rps / d.rps:.2f}")
    print(f"/health, 4 connections, 3 s; {HUNG} parameter requests to /unresponsive_param "
          f"hanging ({HANG_TIMEOUT_S:g} s budget)")
    print(alone.line("/health alone"))
    print(hung_load.line(f"/health with {HUNG} calls hanging"))
    print(f"hung calls answered {sorted(set(statuses))} after {hung_s:.1f} s")


if __name__ == "__main__":
    main()
