"""The fleet simulator (bench/fleet_sim.py) as a test fixture: its primary, plain HTTP to it,
its fault stream read by a thread, and a fault cleared through it until a robot's event
comes back."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.harness import ROOT, wait_until


class SimPrimary:
    """The primary the simulator started (a fleet primary over sites, or a robots' primary)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    def request(self, method: str, path: str, timeout: float = 30) -> tuple[int, Any, bytes]:
        """One request on its own connection: status, JSON body (None if empty), raw body."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, "/api/v1" + path)
            resp = conn.getresponse()
            body = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(body) if body else None, body

    def online(self) -> set[str]:
        """Names of the peers /health lists online."""
        status, body, _ = self.request("GET", "/health")
        if status != 200:
            return set()
        return {p["name"] for p in body.get("peers", []) if p["status"] == "online"}


@contextlib.contextmanager
def fleet_sim(args: list[str], log: Path, budget: float, what: str) -> Iterator[SimPrimary]:
    """Run bench/fleet_sim.py with `args` (stderr to `log`) until its `primary:` line; yield
    that primary; stop the whole simulator (its process group) afterwards."""
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fleet_sim.py"), *args],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)
    try:
        assert proc.stdout is not None
        found: list[str] = []

        def read() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode(errors="replace").strip()
                if line.startswith("primary: "):
                    found.append(line)
        threading.Thread(target=read, daemon=True).start()
        wait_until(lambda: found or proc.poll() is not None, budget, what)
        assert found, (f"fleet_sim exited with {proc.returncode}; {log}:\n"
                       + log.read_text(errors="replace")[-3000:])
        host, port = found[0].split()[1].removeprefix("http://").split(":")
        yield SimPrimary(host, int(port))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@contextlib.contextmanager
def fault_events(primary: SimPrimary) -> Iterator[list[dict[str, Any]]]:
    """The primary's fault stream: its events' data, appended by a reader thread."""
    events: list[dict[str, Any]] = []
    conn = http.client.HTTPConnection(primary.host, primary.port, timeout=300)
    try:
        conn.request("GET", "/api/v1/faults/stream")
        resp = conn.getresponse()
        assert resp.status == 200

        def read() -> None:
            try:
                for raw in resp.fp:
                    if raw.startswith(b"data: "):
                        events.append(json.loads(raw[6:]))
            except (OSError, ValueError):
                pass
        threading.Thread(target=read, daemon=True).start()
        yield events
    finally:
        conn.close()


def clear_until(primary: SimPrimary, path: str, arrived: Callable[[], bool],
                budget: float = 120) -> bool:
    """DELETE `path` through the primary (forwarded to the robot) until `arrived()`.

    The relays open once a stream client is attached, so a clear before that has no event;
    the simulated robot reports its fault again 2 s after a clear, as the demo lidar does."""
    deadline = time.monotonic() + budget
    while not arrived() and time.monotonic() < deadline:
        status, _, _ = primary.request("DELETE", path)
        assert status in (204, 404)
        wait = time.monotonic() + 5
        while not arrived() and time.monotonic() < wait:
            time.sleep(0.1)
    return arrived()
