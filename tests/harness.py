"""Test harness: start gateway processes and talk HTTP to them."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]


def expect_line(stream: Any, token: str, limit: int = 200, proc: Any = None) -> None:
    """Read a child's output until a line that is `token` (AssertionError with what it printed
    otherwise, after killing `proc`: nothing is left running); lines before it (DDS log
    lines) are skipped."""
    seen = []
    for _ in range(limit):
        line = stream.readline()
        if not line:
            break
        if line.strip() == token:
            return
        seen.append(line)
    if proc is not None:
        proc.kill()
        proc.wait(10)
    raise AssertionError(f"expected {token!r} from the child; it printed: {''.join(seen)!r}")


def wait_until(predicate: Callable[[], Any], timeout: float, what: str,
               interval: float = 0.1) -> Any:
    """Poll predicate until it is true (AssertionError naming `what` past `timeout`); its
    value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def enc(topic: str) -> str:
    """URL-encode a topic or parameter path for use as one path segment."""
    return quote(topic, safe="")


class Response:
    """Status, headers and body of one HTTP exchange."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<{self.status} {self.body[:300]!r}>"


class Gateway:
    """A real `diag-gateway run` process on loopback."""

    def __init__(self, port: int, domain: int, settings: Sequence[str] = (),
                 log_path: Path | None = None,
                 env: Mapping[str, str | None] | None = None) -> None:
        self.port = port
        self.domain = domain
        self.settings = list(settings)
        self.log_path = log_path
        self.env = dict(env or {})  # the starting shell's variables (None: unset)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        """Base URL."""
        return f"http://127.0.0.1:{self.port}/api/v1"

    def start(self, timeout: float = 30.0) -> Gateway:
        """Start and wait until /health answers."""
        from gateway.demo.robot import ros_env

        env = ros_env(self.domain)
        env["PYTHONUNBUFFERED"] = "1"
        for key, value in self.env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        cmd = [sys.executable, "-m", "gateway", "run", "--port", str(self.port),
               "--domain", str(self.domain)]
        for s in self.settings:
            cmd += ["--set", s]
        if self.log_path:
            with open(self.log_path, "wb") as out:
                self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)
        else:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}; see "
                                   f"{self.log_path}")
            try:
                if self.get("/health").status in (200, 503):
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("gateway did not answer /health in time")

    def stop(self) -> None:
        """SIGINT, then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def _conn(self, timeout: float) -> http.client.HTTPConnection:
        """A connection to the gateway (plain HTTP; subclasses may use TLS)."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None, raw: bytes | None = None,
                timeout: float = 30.0) -> Response:
        """One HTTP request; path is below /api/v1 unless it starts with http."""
        conn = self._conn(timeout)
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        try:
            conn.request(method, "/api/v1" + path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()},
                            resp.read())
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> Response:
        """GET."""
        return self.request("GET", path, **kw)

    def wait_for(self, path: str, predicate: Any, timeout: float = 15.0) -> Any:
        """Poll GET path until predicate(json) is true; returns the json."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            resp = self.get(path)
            if resp.status == 200:
                last = resp.json()
                if predicate(last):
                    return last
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting on {path}; last answer: {last!r}")

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def assert_error(resp: Response, status: int, error_code: str | None = None,
                 vendor_code: str | None = None) -> dict[str, Any]:
    """The response is the spec's error body with this status."""
    assert resp.status == status, resp
    assert resp.headers.get("content-type", "").startswith("application/json"), resp.headers
    body = resp.json()
    assert isinstance(body.get("message"), str) and body["message"], body
    assert isinstance(body.get("error_code"), str), body
    if error_code is not None:
        assert body["error_code"] == error_code, body
    if vendor_code is not None:
        assert body.get("vendor_code") == vendor_code, body
    return body  # type: ignore[no-any-return]
