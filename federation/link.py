"""One peer's copy of a trigger or subscription, as push links (push_links.py) and shared
page-stream upstreams (peer_watch.py) both hold it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

PEER_CHECK_S = 0.25  # how often an idle link looks at its peer's health


@dataclass(eq=False)
class Link:
    """One peer's copy of a trigger or subscription and the task reading its stream."""

    peer: str
    item_path: str  # /{kind}/{id}/{triggers|cyclic-subscriptions}/{remote id} on the peer
    state: str = "linking"  # linking, linked, failed, ended
    reason: str = ""
    latest: Any = None  # newest relayed payload `data` (subscriptions)
    has_latest: bool = False
    task: asyncio.Task[None] | None = None
    received: int = 0
    since: float = field(default_factory=time.monotonic)  # last state change
    renewed: float = field(default_factory=time.monotonic)  # last lease renewal (triggers)

    @property
    def leased(self) -> bool:
        """True for a trigger copy (it lives by the lease the primary renews)."""
        return self.item_path.split("/")[3:4] == ["triggers"]

    def set(self, state: str, reason: str = "") -> None:
        """A new state (and why)."""
        self.state, self.reason, self.since = state, reason, time.monotonic()
        if state != "linked":
            self.latest, self.has_latest = None, False  # no stale peer items in frames

    def body(self) -> dict[str, Any]:
        """The link as shown in the owner's x-vendor `peers`."""
        out: dict[str, Any] = {"state": self.state, "path": self.item_path}
        if self.reason:
            out["reason"] = self.reason
        return out
