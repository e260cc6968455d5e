"""Freeze frame capture: the newest samples of a fault's topics, stored off the event loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..ros.topics.samples import sample_to_json
from .model import CLEARED, FaultRecord
from .snapshots import SnapshotConfig, select_topics, stored_frame
from .store import FaultStore
from .writer import StoreWriter

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)

OFFLOOP_BYTES = 64 * 1024
CAPTURE_GRAPH_WAIT_S = 10.0


class FrameCapture:
    """One capture task per fault code; a newer capture of the same code replaces the older."""

    def __init__(self, state: GatewayState, writer: StoreWriter, cfg: SnapshotConfig, timeout_s: float,
                 retain_on_clear: bool, fault_of: Callable[[str], FaultRecord | None]) -> None:
        self.state = state
        self.writer = writer
        self.cfg = cfg
        self.timeout_s = timeout_s
        self.retain_on_clear = retain_on_clear
        self.fault_of = fault_of
        self.tasks: dict[str, asyncio.Task[Any]] = {}

    def start(self, code: str, origin: str | None = None) -> None:
        """Capture the frames of `code` in the background."""
        old = self.tasks.pop(code, None)
        if old is not None:
            old.cancel()
        task = asyncio.ensure_future(self._capture(code, origin))
        self.tasks[code] = task

        def done(t: asyncio.Task[Any]) -> None:
            if self.tasks.get(code) is t:
                del self.tasks[code]
            if not t.cancelled() and t.exception() is not None:
                log.warning("freeze frame capture of %s failed", code, exc_info=t.exception())

        task.add_done_callback(done)

    def cancel(self, code: str) -> None:
        """Drop a running capture (its fault was cleared)."""
        task = self.tasks.pop(code, None)
        if task is not None:
            task.cancel()

    async def stop(self) -> None:
        """Cancel every running capture."""
        tasks = list(self.tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _capture(self, code: str, origin: str | None) -> None:
        fault = self.fault_of(code)
        if fault is None:
            return
        # Right after a start (or a node's start) the graph may not know the node or its
        # topics yet: wait for them a little.
        deadline = time.monotonic() + CAPTURE_GRAPH_WAIT_S
        while True:
            graph = self.state.cache.graph
            node = graph.node(fault.sources[0]) if fault.sources else None
            own = [topic for topic, _ in node.publishers] if node is not None else []
            topics, rule = select_topics(code, self.cfg, own)
            if rule == "none":
                return
            known = bool(topics) and all(t in graph.topics for t in topics)
            if known or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        if not topics:
            return
        results = await asyncio.gather(*(self._frame(graph, t, origin) for t in topics),
                                       return_exceptions=True)
        frames = [r for r in results if isinstance(r, dict)]
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                log.debug("freeze frame of %s: %r", code, r)
        fault = self.fault_of(code)
        if fault is None or (fault.status == CLEARED and not self.retain_on_clear):
            return
        if frames:
            await self.writer.call(FaultStore.put_snapshots, code, frames)

    async def _frame(self, graph: Any, topic: str, origin: str | None) -> dict[str, Any] | None:
        info = graph.topics.get(topic)
        if info is None or not info.type:
            return None
        sample, _entry = await self.state.pool.latest(topic, info.type, self.timeout_s)
        if sample is None:
            return None
        if len(sample.data) > OFFLOOP_BYTES:
            raw = await asyncio.get_running_loop().run_in_executor(
                None, sample_to_json, info.type, sample.data)
        else:
            raw = sample_to_json(info.type, sample.data)
        return stored_frame(topic, info.type, orjson.loads(raw), time.time_ns(), origin)
