"""Service calls through the gateway against direct rclpy calls, and /health while calls hang.

Prints calls/s of `POST .../operations/calibrate/executions` (wrk) and of direct rclpy
`call_async` on the same service, all with 8 calls in flight, in alternating rounds after a
warm-up. The direct side runs twice per round, spun by SingleThreadedExecutor (the stock choice)
and by rclpy's EventsExecutor (about half its CPU per call); the baseline of a round is the
faster of the two, and the verdict is the median of per-round ratios with spread (target:
gateway >= 0.8 of direct). CPU per call of the gateway process and of each direct client. Then
/health p50/p99 (wrk) alone and while 20 parameter requests to the never-answering node are
outstanding. The gateway's executor is the setting ros.executor; who takes its service
responses (the event loop or that executor) the setting ros.service_replies.

Each side is alone on the service during its runs: every response of a service reaches each of
its clients (rmw filters at take), and an idle client's process pays for the other side's calls
on the same two cores. So a direct client is made per run, and the gateway closes its client
between rounds (ros.service_client_idle_sec=1 here; the bench waits for /health to show it).

    .venv/bin/python bench/ops.py       # ROS domain $DIAG_BENCH_DOMAIN (default 98)
    .venv/bin/python bench/ops.py ros.service_replies=executor   # gateway settings (key=value)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from bench._load import LoadResult  # noqa: E402
from bench._wrk import WrkResult, cpu_s, run_measured, run_wrk, spread, wrk_path  # noqa: E402
from gateway.demo.robot import Robot  # noqa: E402
from gateway.settings.config import load as load_settings  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = int(os.environ.get("DIAG_BENCH_DOMAIN", "98"))
SECONDS = 3.0
ROUNDS = 5
TARGET = 0.8
POST_LUA = 'wrk.method = "POST"\nwrk.body = "{}"\nwrk.headers["Content-Type"] = "application/json"\n'
IN_FLIGHT = 8
# The direct baselines: executor kind -> label (the faster of them is a round's baseline).
DIRECT = {"single": "SingleThreadedExecutor", "events": "EventsExecutor"}
HUNG = 20
# The gateway closes its service client this long after a round, so neither side's idle client
# sees the other side's responses (each costs its process CPU on the shared cores).
CLIENT_IDLE_S = 1.0
HANG_TIMEOUT_S = 10.0
# The lidar's Trigger service: its server does not log per call, so the gateway's own cost shows.
SERVICE = "/perception/lidar/calibrate"
CALL_PATH = "/api/v1/apps/lidar_sensor/operations/calibrate/executions"
HUNG_PATH = "/api/v1/apps/unresponsive_param/configurations"


def gateway_calls(gw: Gateway, seconds: float, script: str) -> WrkResult:
    """Service calls through the gateway over IN_FLIGHT keep-alive connections (wrk)."""
    assert gw.proc is not None
    return run_measured(f"http://127.0.0.1:{gw.port}{CALL_PATH}", gw.proc.pid, seconds,
                        connections=IN_FLIGHT, script=script)


class DirectClient:
    """A plain rclpy client keeping IN_FLIGHT calls outstanding (the baseline).

    Its node, service client and executor are made for each run and destroyed after it: every
    response of a service reaches each client of it (rmw filters at take), so a client left
    open between its runs would spend this process's CPU on the other side's calls, on the
    same two cores. The EventsExecutor client stalls here in some runs (calls answered only
    seconds later: see the per-round max latency); the SingleThreadedExecutor's does not, and
    a round's baseline is the faster of the two.
    """

    def __init__(self, executor: str) -> None:
        import rclpy  # noqa: PLC0415 - rclpy only once ROS runs
        from std_srvs.srv import Trigger  # noqa: PLC0415 - ROS types load on first use

        self.rclpy = rclpy
        self.kind = executor
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=DOMAIN)
        self.srv_type = Trigger
        self.request = Trigger.Request()
        self.runs = 0

    def _spin(self, executor: Any, running: threading.Event) -> None:
        while running.is_set() and self.context.ok():
            executor.spin_once(timeout_sec=0.05)

    def run(self, seconds: float) -> LoadResult:
        """Calls/s with IN_FLIGHT outstanding for `seconds` (a new node, client and executor)."""
        from rclpy.executors import (  # noqa: PLC0415 - rclpy only once ROS runs
            SingleThreadedExecutor,
        )
        from rclpy.experimental import EventsExecutor  # noqa: PLC0415 - rclpy only once ROS runs

        self.runs += 1
        node = self.rclpy.create_node(f"_bench_direct_{self.kind}_{self.runs}",
                                      context=self.context)
        self.client = node.create_client(self.srv_type, SERVICE)
        executor = (EventsExecutor if self.kind == "events"
                    else SingleThreadedExecutor)(context=self.context)
        executor.add_node(node)
        running = threading.Event()
        running.set()
        thread = threading.Thread(target=self._spin, args=(executor, running), daemon=True)
        thread.start()
        try:
            while not self.client.service_is_ready():
                time.sleep(0.05)
            self.first_answer()
            return self._run(seconds)
        finally:
            running.clear()
            thread.join(2.0)
            executor.shutdown()
            node.destroy_node()

    def _run(self, seconds: float) -> LoadResult:
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
        cpu0 = cpu_s(os.getpid())
        for _ in range(IN_FLIGHT):
            issue()
        done.wait(seconds + 10.0)
        self.cpu_us_per_call = (cpu_s(os.getpid()) - cpu0) * 1e6 / max(1, counts[0])
        return LoadResult(counts[0], counts[1], time.perf_counter() - t0, lat)

    def first_answer(self, tries: int = 20) -> None:
        """Call until an answer arrives: a server can see the client before its answers can
        reach it, and an answer sent before then is lost (that call would never finish)."""
        for _ in range(tries):
            answered = threading.Event()
            fut = self.client.call_async(self.request)
            fut.add_done_callback(lambda _f, event=answered: event.set())
            if answered.wait(0.5):
                return
            self.client.remove_pending_request(fut)
        raise RuntimeError(f"{SERVICE} did not answer {tries} calls")

    def close(self) -> None:
        """Shut the context down."""
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


async def health_while_hung(port: int, seconds: float) -> tuple[WrkResult, list[int], float]:
    """/health load while HUNG calls are outstanding; (load, hung statuses, hung seconds)."""
    t0 = time.perf_counter()
    hung = asyncio.ensure_future(hung_calls(port))
    await asyncio.sleep(0.3)  # let every hung request reach the gateway
    load = await asyncio.to_thread(run_wrk, f"http://127.0.0.1:{port}/api/v1/health", seconds,
                                   4)
    assert not hung.done(), "the hung calls ended before the /health load did"
    statuses = await hung
    return load, statuses, time.perf_counter() - t0


def main() -> None:
    """Run the comparison and print the figures."""
    wrk_path()
    settings = [f"parameter_service_timeout_sec={HANG_TIMEOUT_S}",
                "parameter_negative_cache_sec=0", f"service_call_timeout_sec={HANG_TIMEOUT_S}",
                f"ros.service_client_idle_sec={CLIENT_IDLE_S}", *sys.argv[1:]]
    loaded = load_settings(None, settings)
    executor = loaded.get("ros.executor", "single")
    replies = loaded.get("ros.service_replies", "executor")
    idle_s = float(loaded.get("ros.service_client_idle_sec", CLIENT_IDLE_S))
    with tempfile.TemporaryDirectory() as tmp, \
            Robot.start(DOMAIN, nodes=("lidar_sensor", "unresponsive_param")), \
            Gateway(free_port(), DOMAIN, [*settings, f"state_dir={tmp}/state"]) as gw:
        script = str(Path(tmp) / "post.lua")
        Path(script).write_text(POST_LUA)
        gw.wait_for("/apps", lambda b: {"lidar_sensor", "unresponsive_param"}
                    <= {i["id"] for i in b["items"]}, timeout=20)
        assert gw.proc is not None
        gw_pid = gw.proc.pid
        clients = {kind: DirectClient(kind) for kind in DIRECT}
        try:
            gateway_calls(gw, 1.0, script)  # warm-up
            for client in clients.values():
                client.run(1.0)
            gws: list[WrkResult] = []
            directs: dict[str, list[tuple[LoadResult, float]]] = {k: [] for k in DIRECT}
            bystander: list[float] = []  # the gateway's CPU per direct call
            for _ in range(ROUNDS):
                gw.request("POST", CALL_PATH.removeprefix("/api/v1"), {})  # client matched
                gws.append(gateway_calls(gw, SECONDS, script))
                for kind, client in clients.items():
                    gw.wait_for("/health", lambda b: b["x-vendor-service-calls"]
                                ["loop_clients"] == 0 or idle_s <= 0, timeout=10 + idle_s)
                    gw_cpu0 = cpu_s(gw_pid)
                    direct = client.run(SECONDS)
                    bystander.append((cpu_s(gw_pid) - gw_cpu0) * 1e6 / max(1, direct.requests))
                    directs[kind].append((direct, client.cpu_us_per_call))
        finally:
            for client in clients.values():
                client.close()
        health_url = f"http://127.0.0.1:{gw.port}/api/v1/health"
        alone = run_wrk(health_url, 3.0, 4)
        hung_load, statuses, hung_s = asyncio.run(health_while_hung(gw.port, 3.0))
    best = [max(directs[k][r][0].rps for k in DIRECT) for r in range(ROUNDS)]
    ratios = [g.rps / b for g, b in zip(gws, best, strict=True)]
    print(f"service calls to {SERVICE} (std_srvs/Trigger), {IN_FLIGHT} in flight, "
          f"{ROUNDS} alternating rounds x {SECONDS:g} s; gateway ros.executor={executor}, "
          f"ros.service_replies={replies}")
    print(f"gateway POST .../executions (wrk)   {statistics.median(g.rps for g in gws):8.0f} "
          f"calls/s, p50 {statistics.median(g.p50_ms for g in gws):.2f} ms, CPU "
          f"{statistics.median(g.cpu_us_per_req for g in gws):.0f} us/call (whole process)")
    for kind in DIRECT:
        runs = directs[kind]
        print(f"direct rclpy call_async, {DIRECT[kind]:<23}"
              f"{statistics.median(d.rps for d, _ in runs):8.0f} calls/s, p50 "
              f"{statistics.median(d.pct(50) for d, _ in runs):.2f} ms, CPU "
              f"{statistics.median(c for _, c in runs):.0f} us/call")
    print(f"gateway CPU during the direct rounds (its client closed after "
          f"ros.service_client_idle_sec={idle_s:g}): {statistics.median(bystander):.0f} us "
          f"per direct call")
    for kind in DIRECT:
        per = [g.rps / d.rps for g, (d, _) in zip(gws, directs[kind], strict=True)]
        cpu = [c / g.cpu_us_per_req for g, (_, c) in zip(gws, directs[kind], strict=True)]
        print(f"vs {DIRECT[kind]}: calls/s ratio {spread(per)}; CPU per call direct/gateway "
              f"{spread(cpu)}")
    for r in range(ROUNDS):
        runs = {kind: directs[kind][r][0] for kind in DIRECT}
        sides = ", ".join(f"{kind} {d.rps:.0f} (max {max(d.latencies_ms):.0f} ms)"
                          for kind, d in runs.items())
        print(f"round {r + 1}: gateway {gws[r].rps:.0f}, {sides} calls/s")
    verdict = "met" if statistics.median(ratios) >= TARGET else "NOT met"
    print(f"ratio gateway / faster direct client, calls/s: {spread(ratios)}; target >= "
          f"{TARGET:g}: {verdict}")
    print(f"/health, 4 connections, 3 s; {HUNG} parameter requests to /unresponsive_param "
          f"hanging ({HANG_TIMEOUT_S:g} s budget)")
    print(f"/health alone: {alone.rps:.0f} req/s, p50 {alone.p50_ms:.2f} ms, "
          f"p99 {alone.p99_ms:.2f} ms")
    print(f"/health with {HUNG} calls hanging: {hung_load.rps:.0f} req/s, p50 "
          f"{hung_load.p50_ms:.2f} ms, p99 {hung_load.p99_ms:.2f} ms")
    print(f"hung calls answered {sorted(set(statuses))} after {hung_s:.1f} s")


if __name__ == "__main__":
    main()
