"""Participants bound on this host that the gateway's DDS layer does not know (pure).

Fast DDS 3.2 sometimes never rediscovers a participant that was frozen past its lease and
resumed (docs/ros.md): the gateway then re-joins DDS (frozen.py), and notices what stays
unseen anyway (a DDS participant that is not a ROS one, a rejoin that did not help): the
participants bound on this host (ros/rejoin/portcensus.py, the gateway's own included) outnumber the
participants it discovered (ros/graph/census.py). A participant just starting is bound before it is
discovered, so only a shortfall lasting WINDOW_S (past a lease) counts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

CHECK_EVERY_S = 5.0  # a /proc read and two graph queries: cheap, but an idle gateway stays idle
WINDOW_S = 10.0  # longer than a lease (the demo's 3 s) and a start's discovery burst


class UnseenParticipants:
    """Tracks how long more participants are bound on this host than are discovered."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self.short = 0  # bound minus discovered at the last observation (0: none missing)
        self.since: float | None = None  # monotonic start of the current shortfall
        self.since_wall: float | None = None  # the same, wall clock (epoch seconds)
        self.reported = False  # the shortfall lasted past the window

    def observe(self, bound: int | None, known: int | None, now: float,
                wall: float) -> str | None:
        """Account one check (bound: participants bound on this host, None: unknown; known:
        participants the DDS layer discovered, None: unknown); "unseen" when a shortfall has
        just lasted past the window, "cleared" when a reported one ended, else None."""
        short = 0 if bound is None or known is None else max(0, bound - known)
        self.short = short
        if short == 0:
            was = self.reported
            self.since = self.since_wall = None
            self.reported = False
            return "cleared" if was else None
        if self.since is None:
            self.since, self.since_wall = now, wall
        if not self.reported and now - self.since >= self.window_s:
            self.reported = True
            return "unseen"
        return None

    @property
    def unseen(self) -> int:
        """Participants missing for longer than the window (0: none)."""
        return self.short if self.reported else 0

    def health(self) -> dict[str, Any]:
        """For /health: how many are unseen and since when (UTC, ISO 8601)."""
        since = None
        if self.reported and self.since_wall is not None:
            since = datetime.fromtimestamp(self.since_wall, UTC).isoformat(
                timespec="seconds").replace("+00:00", "Z")
        return {"participants_unseen": self.unseen, "participants_unseen_since": since}
