"""A threaded SSE test client: a real HTTP connection whose frames arrive in a queue."""

from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import time
from typing import Any


class SseClient:
    """GET one SSE path; frames ({id, event, data}) and comments are collected by a thread."""

    def __init__(self, port: int, path: str, headers: dict[str, str] | None = None,
                 timeout: float = 60.0) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.conn.request("GET", path, headers={"Accept": "text/event-stream", **(headers or {})})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()
        self.comments: list[str] = []
        self.ended = threading.Event()
        self.body = b""
        if self.status == 200:
            self._thread = threading.Thread(target=self._read, daemon=True)
            self._thread.start()
        else:
            self.body = self.resp.read()
            self.conn.close()
            self.ended.set()

    def _read(self) -> None:
        fields: dict[str, str] = {}
        try:
            while True:
                raw = self.resp.readline()
                if not raw:
                    return
                line = raw.decode().rstrip("\r\n")
                if line == "":
                    if "data" in fields:
                        self.frames.put({"id": int(fields.get("id", "0")),
                                         "event": fields.get("event", "message"),
                                         "data": json.loads(fields["data"])})
                    fields = {}
                elif line.startswith(":"):
                    self.comments.append(line[1:])
                else:
                    key, _, value = line.partition(": ")
                    fields[key] = value
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            return
        finally:
            self.conn.close()
            self.ended.set()

    def next_frame(self, timeout: float = 20.0) -> dict[str, Any]:
        """The next frame (AssertionError when none comes in time)."""
        try:
            return self.frames.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no SSE frame within {timeout} s") from None

    def collect(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The next `count` frames."""
        deadline = time.monotonic() + timeout
        return [self.next_frame(max(0.1, deadline - time.monotonic())) for _ in range(count)]

    def drain(self) -> list[dict[str, Any]]:
        """Frames received so far."""
        out = []
        while True:
            try:
                out.append(self.frames.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        """Disconnect (shut down so the server sees it at once)."""
        try:
            sock = self.conn.sock
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()
