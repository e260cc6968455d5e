"""Wakes an idle graph poll when the ROS graph changes (ros/graph/graph_watch.py), over rejoins."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..process.waits import wait_event

log = logging.getLogger(__name__)


class GraphWake:
    """The poller's graph-change notices: `changed` is set (on the loop) after each change."""

    def __init__(self, bridge: Any, enabled: bool) -> None:
        self.bridge = bridge
        self.enabled = enabled
        self.changed = asyncio.Event()
        self.watch: Any = None
        self.why_not: str | None = None  # why the watch could not start (polling only)
        self._after = 0  # start again once bridge.rejoins reaches this
        hook = getattr(bridge, "on_rejoin", None)
        if enabled and hook is not None:  # its node goes at a rejoin: stop before, then anew
            hook(self._drop)

    def active(self) -> bool:
        """True when a change wakes the poll (the watch is started here when it can be)."""
        if not self.enabled or self.why_not is not None:
            return False
        if self.watch is None and getattr(self.bridge, "rejoins", 0) >= self._after:
            from ..ros.graph.graph_watch import (  # noqa: PLC0415 - gateway.ros: on watch start
                GraphWatch,
            )

            loop = asyncio.get_running_loop()

            def notice() -> None:
                try:
                    loop.call_soon_threadsafe(self.changed.set)
                except RuntimeError:  # the loop closed (shutdown): nobody to tell
                    pass

            try:
                self.watch = GraphWatch(self.bridge.node, notice).start()
            except Exception as exc:  # no rcl graph guard condition here: polling only
                self.why_not = str(exc) or type(exc).__name__
                log.info("graph changes not watched (%s): an idle graph is polled every "
                         "discovery.idle_poll_interval_ms", self.why_not)
                return False
        return self.watch is not None

    async def wait(self, timeout_s: float) -> bool:
        """Wait for a change notice up to timeout_s; True when one came."""
        return await wait_event(self.changed, max(0.0, timeout_s))

    def _drop(self) -> None:
        if self.watch is not None:
            self.watch.stop()
            self.watch = None
        self._after = getattr(self.bridge, "rejoins", 0) + 1
        self.changed.set()  # poll at once: the graph is seen through the new node

    def stop(self) -> None:
        """Stop watching (before the bridge's node goes)."""
        self.enabled = False
        if self.watch is not None:
            self.watch.stop()
            self.watch = None

    def health(self) -> dict[str, Any]:
        """For /health: whether graph changes wake the poll, and how many did."""
        return {"graph_watch": self.watch is not None,
                "graph_watch_notices": self.watch.notices if self.watch is not None else 0}
