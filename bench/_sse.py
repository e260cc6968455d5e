"""Shared parts of the SSE benchmarks: worker processes holding SSE clients, percentiles."""

from __future__ import annotations

import json
import math
import subprocess
import sys


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class Workers:
    """Worker processes (`script --worker <args>`), each printing "ready" then its latencies."""

    def __init__(self, script: str, worker_args: list[list[str]]) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        for args in worker_args:
            self.procs.append(subprocess.Popen([sys.executable, script, "--worker", *args],
                                               stdout=subprocess.PIPE, text=True))
        for p in self.procs:
            assert p.stdout is not None
            line = p.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"worker failed to connect: {line!r}")

    def latencies(self) -> list[float]:
        """Every worker's latencies (waits for the workers to finish)."""
        out: list[float] = []
        for p in self.procs:
            stdout, _ = p.communicate(timeout=300)
            out.extend(json.loads(stdout.strip().splitlines()[-1]))
        return out

    def stop(self) -> None:
        """Kill the workers still running."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
