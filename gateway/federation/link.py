"""One peer's copy of a trigger or subscription, as push links (push_links.py) and shared
page-stream upstreams (peer_watch.py) both hold it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

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


async def next_chunk(resp: aiohttp.ClientResponse,
                     stop: Callable[[], str | None]) -> bytes | str:
    """The peer stream's next chunk (b"" at its end); or, while none comes, the reason
    `stop()` gives to leave it (asked every PEER_CHECK_S; None: keep waiting)."""
    read = asyncio.ensure_future(resp.content.readany())
    try:
        while True:
            done, _ = await asyncio.wait({read}, timeout=PEER_CHECK_S)
            if done:
                return read.result()
            reason = stop()
            if reason is not None:
                return reason
    finally:
        if not read.done():
            read.cancel()
