"""wrk as the load generator: one run, and alternating rounds of several servers with ratios."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass

import psutil

_RPS = re.compile(r"Requests/sec:\s+([\d.]+)")
_PCT = re.compile(r"^\s+(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
_NON2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_SOCKET = re.compile(r"Socket errors:.*")
_UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk_path() -> str:
    """The wrk executable; `make bench` installs the Debian package when it is missing."""
    path = shutil.which("wrk")
    if path is None:
        raise SystemExit("wrk is not installed: run `make bench` (apt-get install wrk)")
    return path


@dataclass
class WrkResult:
    """Throughput and latency of one wrk run."""

    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_us_per_req: float = float("nan")  # the server process's CPU per answered request


def run_wrk(url: str, seconds: float, connections: int = 16, threads: int = 1,
            headers: tuple[str, ...] = (), script: str | None = None) -> WrkResult:
    """One wrk run of url over keep-alive connections (GET, or what the Lua script sets)."""
    cmd = [wrk_path(), f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
    for h in headers:
        cmd += ["-H", h]
    if script:
        cmd += ["-s", script]
    proc = subprocess.run([*cmd, url], capture_output=True, text=True)
    out = proc.stdout
    if proc.returncode:
        raise RuntimeError(f"wrk failed on {url}: {proc.stdout}{proc.stderr}")
    match = _RPS.search(out)
    if match is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    pct = {p: float(v) * _UNIT_MS[u] for p, v, u in _PCT.findall(out)}
    non2xx = _NON2XX.search(out)
    errors = int(non2xx.group(1)) if non2xx else 0
    if _SOCKET.search(out):
        errors += 1
    return WrkResult(float(match.group(1)), pct.get("50", float("nan")),
                     pct.get("99", float("nan")), errors)


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process used so far."""
    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system)


def run_measured(url: str, pid: int | None, seconds: float, connections: int = 16,
                 headers: tuple[str, ...] = (), script: str | None = None) -> WrkResult:
    """run_wrk, plus the server's CPU per request when its pid is given."""
    before = cpu_s(pid) if pid else 0.0
    result = run_wrk(url, seconds, connections, headers=headers, script=script)
    if pid and result.rps > 0:
        used = cpu_s(pid) - before
        result.cpu_us_per_req = used * 1e6 / (result.rps * seconds)
    return result


def alternate(urls: dict[str, tuple[str, int | None]], rounds: int, seconds: float,
              warmup_s: float = 1.0, connections: int = 16) -> dict[str, list[WrkResult]]:
    """Warm every (url, server pid) up, then run them in turn, `rounds` times; per label."""
    for url, _pid in urls.values():
        run_wrk(url, warmup_s, connections)
    out: dict[str, list[WrkResult]] = {label: [] for label in urls}
    for _ in range(rounds):
        for label, (url, pid) in urls.items():
            out[label].append(run_measured(url, pid, seconds, connections))
    return out


def spread(values: list[float]) -> str:
    """Median with min-max."""
    return (f"{statistics.median(values):.2f} (spread {min(values):.2f}-{max(values):.2f}, "
            f"{len(values)} rounds)")


def idle_cpu_rate(pid: int, seconds: float = 3.0) -> float:
    """CPU seconds per second a process uses while no request arrives."""
    before = cpu_s(pid)
    time.sleep(seconds)
    return (cpu_s(pid) - before) / seconds


def ratio_line(label: str, side: list[WrkResult], base: list[WrkResult], target: float,
               base_name: str = "bare", side_idle: float = 0.0) -> str:
    """Per-round ratios (throughput, and CPU per request) with spread, and the verdict.

    On a loaded machine the throughput ratio is noisy; the CPU-per-request ratio (base CPU
    per request / side CPU per request) is what a CPU-bound server's throughput ratio
    would be on idle cores, and the verdict uses it when measured.
    """
    rps = [s.rps / b.rps for s, b in zip(side, base, strict=True)]
    cpu = [b.cpu_us_per_req / s.cpu_us_per_req for s, b in zip(side, base, strict=True)]
    have_cpu = all(c == c for c in cpu)  # not NaN
    verdict_value = statistics.median(cpu if have_cpu else rps)
    verdict = "met" if verdict_value >= target else "NOT met"
    # the side's background threads (ROS executor, graph poll, bridges) use CPU without
    # requests; above that idle rate is the request path's own cost
    above = [b.cpu_us_per_req / (s.cpu_us_per_req - side_idle * 1e6 / s.rps)
             for s, b in zip(side, base, strict=True)]
    line = (f"{label:<22} {statistics.median(s.rps for s in side):7.0f} req/s vs {base_name} "
            f"{statistics.median(b.rps for b in base):7.0f}: throughput ratio {spread(rps)}")
    if have_cpu:
        line += (f"; CPU/request {statistics.median(s.cpu_us_per_req for s in side):.0f} us "
                 f"vs {statistics.median(b.cpu_us_per_req for b in base):.0f} us: "
                 f"CPU ratio {spread(cpu)}")
    line += f"; target >= {target:g}: {verdict}"
    if have_cpu and side_idle:
        med = statistics.median(above)
        line += (f"\n{'':<22} above the gateway's idle {side_idle * 1e3:.0f} ms/s: CPU ratio "
                 f"{spread(above)}; target >= {target:g}: {'met' if med >= target else 'NOT met'}")
    return line
