"""A small keep-alive HTTP/1.1 load generator on raw asyncio streams (cheap per request)."""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass


@dataclass
class LoadResult:
    """Throughput and latency of one run."""

    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rps(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds

    def pct(self, p: float) -> float:
        """Latency percentile in ms."""
        if not self.latencies_ms:
            return float("nan")
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, int(p / 100.0 * len(data)))]

    def line(self, label: str) -> str:
        """One printable line."""
        return (f"{label:<34} {self.rps:10.0f} req/s   p50 {self.pct(50):6.2f} ms   "
                f"p99 {self.pct(99):6.2f} ms   errors {self.errors}")


async def _worker(host: str, port: int, path: str, stop_at: float, lat: list[float],
                  counts: list[int], headers: str, method: str, body: bytes) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    if body:
        headers += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    req = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{headers}\r\n").encode() + body
    try:
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
                    break
            if length:
                await reader.readexactly(length)
            lat.append((time.perf_counter() - t0) * 1000.0)
            counts[0 if status < 400 else 1] += 1
    finally:
        writer.close()


async def run_load(host: str, port: int, path: str, seconds: float = 5.0,
                   connections: int = 16, headers: str = "", method: str = "GET",
                   body: bytes = b"") -> LoadResult:
    """Send `method path` (with a JSON body) over keep-alive connections for `seconds`."""
    lat: list[float] = []
    counts = [0, 0]
    t0 = time.perf_counter()
    stop_at = t0 + seconds
    await asyncio.gather(*(_worker(host, port, path, stop_at, lat, counts, headers, method,
                                   body) for _ in range(connections)))
    return LoadResult(counts[0], counts[1], time.perf_counter() - t0, lat)


def median(values: list[float]) -> float:
    """Median."""
    return statistics.median(values)
