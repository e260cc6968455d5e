"""Readiness: discovery counts as settled once the ROS graph stops changing (pure, explicit now).

DDS discovers the nodes already running over the first second or so after the gateway's
participant appears, so the first graph snapshot is usually empty or partial. The gateway
is ready once the graph stayed unchanged for SETTLE_S, or CAP_S after the start at most.
"""

from __future__ import annotations

SETTLE_S = 1.5
CAP_S = 15.0


class Readiness:
    """Starting until the graph settles; observe() every poll."""

    def __init__(self, start: float, settle_s: float = SETTLE_S, cap_s: float = CAP_S) -> None:
        self.start = start
        self.settle_s = settle_s
        self.cap_s = cap_s
        self.last_change = start
        self.ready_at: float | None = None

    @property
    def ready(self) -> bool:
        """True once discovery settled."""
        return self.ready_at is not None

    def observe(self, changed: bool, now: float) -> bool:
        """Account one poll (changed: the graph differs from the previous poll); ready?"""
        if self.ready_at is not None:
            return True
        if changed:
            self.last_change = now
        if now - self.last_change >= self.settle_s or now - self.start >= self.cap_s:
            self.ready_at = now
        return self.ready_at is not None
