"""A robot's CPU per fan-out read when reads come one at a time (each wakes the gateway from
sleep), against a bare asyncio protocol answering fixed bytes, measured in the same run.

A primary's live merged read wakes every robot once. On a machine simulating a fleet, the CPU
each wake costs bounds the live read's wall time (bench/fleet.py). Here a real robot
gateway on each event loop (server.event_loop: asyncio, uvloop; a light lidar node,
aggregation announcing on loopback, as bench/fleet.py's robots) answers
`GET /version-info` with `X-Vendor-No-Fan-Out` and a new `X-Client-Id` each time, as a
primary's live read asks it; beside it, a bare asyncio server (one Protocol, one write
of a fixed response per request: the floor of any Python asyncio server) answers the same
request bytes. Both are charged their event-loop thread's CPU (schedstat, ns) per request:

- one request every GAP_S (the server sleeps in between: a cold wake each time),
- back to back on one keep-alive connection (warm).

Printed: µs per request of each, and the gateway / bare ratio per loop and mode, alternating
rounds.

    .venv/bin/python bench/wake_cost.py     # ROS domain $BENCH_DOMAIN (default 93)
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from bench._wrk import spread  # noqa: E402
from gateway.demo.nodes import LIGHT_ENV  # noqa: E402
from gateway.demo.robot import ros_env  # noqa: E402
from tests.conftest import free_port  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "93"))
GAP_S = 0.02  # between cold requests
COLD_S = 6.0  # per cold round
WARM = 3000  # requests per warm round
ROUNDS = 3
BARE_BODY = b'{"items":[]}'
LOOPS = ("asyncio", "uvloop")  # the gateway on each (server.event_loop)


def bare_server(port: int) -> None:
    """The floor: an asyncio Protocol that writes a fixed response per request chunk."""
    response = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(BARE_BODY)).encode() + b"\r\n\r\n" + BARE_BODY)

    class Bare(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.transport.write(response)

    async def main() -> None:
        await asyncio.get_running_loop().create_server(Bare, "127.0.0.1", port)
        await asyncio.Event().wait()

    asyncio.run(main())


def loop_cpu_s(pid: int) -> float:
    """CPU seconds of a process's main (event-loop) thread, from schedstat."""
    return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e9


class Conn:
    """One keep-alive connection sending the fan-out read's bytes."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.n = 0

    def get(self) -> bytes:
        self.n += 1
        self.sock.sendall(f"GET /api/v1/version-info HTTP/1.1\r\nHost: 127.0.0.1:{self.port}"
                          f"\r\nX-Vendor-No-Fan-Out: 1\r\nX-Client-Id: live-{self.n}\r\n\r\n"
                          .encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += self.sock.recv(65536)
        head, body = buf.split(b"\r\n\r\n", 1)
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += self.sock.recv(65536)
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"unexpected answer: {head[:80]!r}")
        return body


def per_request_us(pid: int, conn: Conn, cold: bool) -> float:
    """Event-loop CPU per request: cold (GAP_S apart for COLD_S) or back to back."""
    before, n = loop_cpu_s(pid), 0
    if cold:
        end = time.monotonic() + COLD_S
        while time.monotonic() < end:
            conn.get()
            n += 1
            time.sleep(GAP_S)
    else:
        for _ in range(WARM):
            conn.get()
        n = WARM
    return (loop_cpu_s(pid) - before) / n * 1e6


def wait_answering(port: int, budget_s: float) -> Conn:
    deadline = time.monotonic() + budget_s
    while True:
        try:
            conn = Conn(port)
            conn.get()
            return conn
        except (OSError, StopIteration, SystemExit):
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing answers on port {port} after {budget_s:.0f} s"
                                 ) from None
            time.sleep(0.3)


def main() -> None:
    env = {**ros_env(DOMAIN), "PYTHONPATH": str(ROOT), LIGHT_ENV: "1"}
    state = Path(tempfile.mkdtemp(prefix="wake-cost-"))
    bare_port = free_port()
    procs = [subprocess.Popen([sys.executable, "-m", "gateway.demo.nodes", "lidar_sensor"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        gateways: dict[str, tuple[int, Conn]] = {}
        ports = {loop: free_port() for loop in LOOPS}
        for k, (loop, port) in enumerate(ports.items()):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "gateway", "run", "--host", "127.0.0.1", "--port",
                 str(port), "--domain", str(DOMAIN), "--set", f"state_dir={state / loop}",
                 "--set", "aggregation.announce=true", "--set",
                 f"aggregation.mdns_name=wake-cost-{k}", "--set", "snapshots.enabled=false",
                 "--set", "faults.rosout_bridge.enabled=false",
                 "--set", f"server.event_loop={loop}"],
                env=env, stdout=open(state / f"gateway-{loop}.log", "wb"),  # noqa: SIM115 - for the run
                stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen([sys.executable, "-c", "import sys; sys.path.insert(0, "
                                       f"{str(ROOT)!r}); from bench.wake_cost import "
                                       f"bare_server; bare_server({bare_port})"]))
        for k, (loop, port) in enumerate(ports.items()):
            gateways[loop] = (procs[1 + k].pid, wait_answering(port, 60))
        bare = wait_answering(bare_port, 20)
        time.sleep(5.0)  # the gateways' start settles
        for _ in range(200):  # warm-up
            for _pid, conn in gateways.values():
                conn.get()
            bare.get()
        rows: dict[tuple[str, str], list[tuple[float, float]]] = {
            (loop, mode): [] for mode in ("cold", "warm") for loop in LOOPS}
        for _ in range(ROUNDS):
            for mode in ("cold", "warm"):
                b = per_request_us(procs[-1].pid, bare, mode == "cold")
                for loop, (pid, conn) in gateways.items():
                    rows[loop, mode].append((per_request_us(pid, conn, mode == "cold"), b))
        print(f"event-loop CPU per fan-out read (/version-info, X-Vendor-No-Fan-Out): robot "
              f"gateway (server.event_loop: {', '.join(LOOPS)}) vs a bare asyncio protocol; "
              f"{ROUNDS} alternating rounds; cold: one request every {GAP_S * 1e3:.0f} ms, "
              f"warm: {WARM} back to back")
        for (loop, mode), pairs in rows.items():
            print(f"{mode:<5} gateway on {loop:<7} {statistics.median(g for g, _ in pairs):6.1f}"
                  f" us, bare {statistics.median(b for _, b in pairs):6.1f} us; gateway / bare "
                  f"{spread([g / b for g, b in pairs])}")
        for loop in LOOPS:
            cold_g = statistics.median(g for g, _ in rows[loop, "cold"])
            warm_g = statistics.median(g for g, _ in rows[loop, "warm"])
            print(f"on {loop}, a wake from sleep adds {cold_g - warm_g:.0f} us to the "
                  f"gateway's read ({cold_g / warm_g:.1f}x its warm cost)")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
