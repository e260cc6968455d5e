"""Helpers of the push delivery tests: a threaded SSE reader for any stream path.

(No tests here; the test_push* modules import it.)
"""

from __future__ import annotations

import time
from typing import Any

from tests.sse_client import SseClient


class Stream(SseClient):
    """A real HTTP client on one SSE path; frames arrive in a queue from a thread."""

    def __init__(self, port: int, path: str, timeout: float = 60.0) -> None:
        super().__init__(port, path, timeout=timeout)

    def next(self, timeout: float = 20.0) -> dict[str, Any]:
        """The next frame (AssertionError when none comes in time)."""
        return self.next_frame(timeout)

    def next_event(self, event: str, timeout: float = 20.0) -> dict[str, Any]:
        """The first frame of the given event type (earlier frames are skipped)."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.next(max(0.1, deadline - time.monotonic()))
            if last["event"] == event:
                return last
        raise AssertionError(f"no '{event}' frame within {timeout} s (last: {last})")
