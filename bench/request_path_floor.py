"""Hot GETs through the gateway against the floor: a raw uvloop protocol writing the same bytes.

The floor (bench/_floor.py) reads until the blank line and writes a prebuilt response captured
from the gateway (status line, headers and body, byte for byte), on keep-alive connections:
what any Python server on uvloop pays per request. The gateway serves the demo robot (a
cached data read, GET /faults with 20 faults reported first, GET /apps); each path and its
floor run in alternating wrk rounds after a warm-up. Printed per path: throughput of both and
their ratio per round (median, spread), each side's CPU per request (the gateway's split into
its event-loop thread and its other threads, from schedstat), and the share of the gateway's
answers written on the wire (hotwire.py). The floor answers with the bytes captured at the
start (the data read's sample changes twice a second on the gateway: the same size give or
take a digit).

    .venv/bin/python bench/request_path_floor.py [--rounds N] [--seconds S]
    # ROS domain $BENCH_DOMAIN (default 94)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # network rule

from bench._wrk import cpu_s, idle_cpu_rate, run_wrk, spread, wrk_path  # noqa: E402
from bench.request_path import DATA, _report_faults, _wait_up  # noqa: E402
from gateway.demo.robot import Robot  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = int(os.environ.get("BENCH_DOMAIN", "94"))
TARGET = 0.85  # gateway throughput / floor throughput
PATHS = {"data read": DATA, "GET /faults": "/faults", "GET /apps": "/apps"}


def fetch(port: int, path: str) -> bytes:
    """The whole answer (head and body) to the request wrk sends for path."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /api/v1{path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += sock.recv(65536)
        head = buf[:buf.index(b"\r\n\r\n") + 4]
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(buf) < len(head) + length:
            buf += sock.recv(65536)
    if not head.startswith(b"HTTP/1.1 200 "):
        raise SystemExit(f"GET {path}: {head[:80]!r}")
    return buf


def thread_cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds (schedstat) of a process's main (event-loop) thread and of its others."""
    main = other = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ns = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue  # a thread that just ended
        if task.name == str(pid):
            main += ns / 1e9
        else:
            other += ns / 1e9
    return main, other


def hot_counts(port: int) -> tuple[int, int]:
    """The gateway's hot answers so far: (hits, of them on the wire)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=10) as resp:
        hot = json.loads(resp.read())["x-vendor-hot-answers"]
    return int(hot["hits"]), int(hot["on_wire"])


class Round:
    """One wrk round against one server: throughput and CPU per request."""

    def __init__(self, url: str, pid: int, seconds: float, gateway_port: int | None) -> None:
        counts = hot_counts(gateway_port) if gateway_port else (0, 0)
        main0, other0 = thread_cpu_s(pid)
        whole0 = cpu_s(pid)
        result = run_wrk(url, seconds)
        whole1 = cpu_s(pid)
        main1, other1 = thread_cpu_s(pid)
        requests = max(result.rps * seconds, 1.0)
        self.rps, self.errors = result.rps, result.errors
        self.cpu_us = (whole1 - whole0) * 1e6 / requests
        self.loop_us = (main1 - main0) * 1e6 / requests
        self.other_us = (other1 - other0) * 1e6 / requests
        self.on_wire = float("nan")
        if gateway_port:
            self.on_wire = (hot_counts(gateway_port)[1] - counts[1]) / requests


PERF_HZ = 4999


def perf_split(url: str, pid: int, seconds: float, out: Path
               ) -> tuple[float, list[tuple[float, str]]]:
    """CPU per request by thread and shared object (perf's cpu-clock samples of pid during
    one wrk round): total us, and (us, "thread  object") rows, largest first."""
    rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_HZ),
                            "-p", str(pid), "-o", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = run_wrk(url, seconds)
    rec.send_signal(signal.SIGINT)
    rec.wait(30)
    report = subprocess.run(["perf", "report", "-i", str(out), "--stdio", "-q", "--no-children",
                             "--sort", "comm,dso", "--show-nr-samples"],
                            capture_output=True, text=True).stdout
    requests = max(result.rps * seconds, 1.0)
    rows = []
    for line in report.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].endswith("%"):
            us = int(parts[1]) / PERF_HZ * 1e6 / requests
            rows.append((us, f"{parts[2]:<16} {' '.join(parts[3:])}"))
    rows.sort(reverse=True)
    return sum(us for us, _ in rows), rows


def med(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    """Start the demo robot and a gateway, capture its answers, start one floor per path,
    alternate wrk rounds and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--perf", action="store_true",
                        help="then one round of each side under perf: where the CPU goes")
    args = parser.parse_args()
    wrk_path()
    with tempfile.TemporaryDirectory() as tmp, Robot.start(DOMAIN), \
            Gateway(free_port(), DOMAIN, [f"state_dir={tmp}/state"],
                    Path(tmp) / "gateway.log") as gw:
        assert gw.proc is not None
        gw_pid = gw.proc.pid
        gw.wait_for(DATA, lambda b: b["x-vendor"]["status"] == "data", timeout=30)
        _report_faults(gw, DOMAIN)
        # the reporter node leaves the graph: slower on a busy machine
        gw.wait_for("/apps", lambda b: all(i["id"] != "bench_reporter" for i in b["items"]),
                    timeout=120)
        floors: list[subprocess.Popen[bytes]] = []
        urls: dict[str, tuple[str, str, int]] = {}  # label -> (gateway url, floor url, pid)
        try:
            for label, path in PATHS.items():
                fetch(gw.port, path)  # the generic path answers and offers it hot
                answer = fetch(gw.port, path)
                file = Path(tmp) / f"floor{len(floors)}.http"
                file.write_bytes(answer)
                port = free_port()
                floors.append(subprocess.Popen(
                    [sys.executable, str(ROOT / "bench" / "_floor.py"), str(port), str(file)]))
                _wait_up(f"http://127.0.0.1:{port}/")
                if fetch(port, path) != answer:
                    raise SystemExit(f"the floor of {label} answers other bytes")
                urls[label] = (f"http://127.0.0.1:{gw.port}/api/v1{path}",
                               f"http://127.0.0.1:{port}/api/v1{path}", floors[-1].pid)
            idle = idle_cpu_rate(gw_pid)
            for gw_url, floor_url, _pid in urls.values():  # warm-up
                run_wrk(gw_url, 1.0)
                run_wrk(floor_url, 1.0)
            results: dict[str, list[tuple[Round, Round]]] = {label: [] for label in urls}
            for _ in range(args.rounds):
                for label, (gw_url, floor_url, floor_pid) in urls.items():
                    side = Round(gw_url, gw_pid, args.seconds, gw.port)
                    base = Round(floor_url, floor_pid, args.seconds, None)
                    results[label].append((side, base))
            split: dict[str, tuple[tuple[float, list[tuple[float, str]]], ...]] = {}
            if args.perf:
                for label, (gw_url, floor_url, floor_pid) in urls.items():
                    split[label] = (
                        perf_split(gw_url, gw_pid, args.seconds, Path(tmp) / "gw.perf"),
                        perf_split(floor_url, floor_pid, args.seconds, Path(tmp) / "fl.perf"))
            sizes = {label: len((Path(tmp) / f"floor{k}.http").read_bytes())
                     for k, label in enumerate(PATHS)}
        finally:
            for p in floors:
                p.terminate()
                p.wait(10)
    print(f"hot GETs, gateway vs the floor (a raw uvloop protocol writing the gateway's "
          f"answer bytes): wrk 1 thread, 16 connections, {args.rounds} alternating rounds x "
          f"{args.seconds:g} s, {os.cpu_count()} cores shared with everything else on this "
          f"machine; gateway idle {idle * 1e3:.1f} ms/s of CPU")
    for label, pairs in results.items():
        rps = [s.rps / b.rps for s, b in pairs]
        cpu = [b.cpu_us / s.cpu_us for s, b in pairs]
        errors = sum(s.errors + b.errors for s, b in pairs)
        verdict = "met" if med(rps) >= TARGET else "NOT met"
        print(f"{label:<12} {med([s.rps for s, _ in pairs]):7.0f} req/s vs floor "
              f"{med([b.rps for _, b in pairs]):7.0f}: throughput ratio {spread(rps)}; "
              f"target >= {TARGET:g}: {verdict}" + (f"  [{errors} errors]" if errors else ""))
        print(f"{'':<12} CPU/request {med([s.cpu_us for s, _ in pairs]):5.1f} us (event loop "
              f"{med([s.loop_us for s, _ in pairs]):.1f}, other threads "
              f"{med([s.other_us for s, _ in pairs]):.1f}) vs floor "
              f"{med([b.cpu_us for _, b in pairs]):5.1f} us: CPU ratio {spread(cpu)}; "
              f"on the wire {med([s.on_wire for s, _ in pairs]):.1%}; answer "
              f"{sizes[label]} bytes")
        # The gateway's idle CPU (its ROS threads and timers, measured before the rounds)
        # counts in its CPU per request above; without it, the request path's own share.
        path = [s.cpu_us - idle * 1e6 / max(s.rps, 1.0) for s, _ in pairs]
        print(f"{'':<12} request path alone (less the gateway's idle CPU): {med(path):5.1f} us: "
              f"CPU ratio {spread([b.cpu_us / p for (_, b), p in zip(pairs, path, strict=True)])}")
        for name, (total, rows) in zip(("gateway", "floor"), split.get(label, ()),
                                       strict=False):
            print(f"{'':<12} perf, {name}: {total:.1f} us/request: " + ", ".join(
                f"{row} {us:.2f}" for us, row in rows[:8] if us >= 0.05))


if __name__ == "__main__":
    main()
