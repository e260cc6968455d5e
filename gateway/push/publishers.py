"""Publishers feeding the bus from /rosout, action goals and parameter events."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from ..events import CONFIGURATIONS, LOGS, OPERATIONS, Event

if TYPE_CHECKING:
    from ..state import GatewayState

log = logging.getLogger(__name__)


def operation_event(app_id: str | None, goal_id: str, action: str, status: str,
                    change: str) -> Event:
    """The bus event of an action goal's status change."""
    return Event(OPERATIONS, app_id, action, change,
                 {"goal_id": goal_id, "action_path": action, "status": status})


class LogTap:
    """Hands /rosout entries from the executor thread to the bus, one loop wake-up per batch."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state
        self._lock = threading.Lock()
        self._batch: list[Any] = []
        self._scheduled = False
        self._index: tuple[int, dict[str, str]] = (-1, {})

    def __call__(self, record: Any) -> None:  # executor thread
        engine = self.state.push
        if engine is None or not self.state.events.has_listeners(LOGS) \
                or not engine.observes(LOGS):
            return
        loop = self.state.bridge.loop
        if loop is None:
            return
        with self._lock:
            self._batch.append(record)
            if self._scheduled:
                return
            self._scheduled = True
        loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        from ..ros.rosout import entry, logger_to_node

        with self._lock:
            batch, self._batch = self._batch, []
            self._scheduled = False
        graph = self.state.cache.graph
        fqns = frozenset(n.fqn for n in graph.nodes)
        apps = self._apps()
        for record in batch:
            node = logger_to_node(record.logger, fqns)
            payload = entry(record, node)
            payload["id"] = f"log_{record.seq}"
            self.state.events.publish(Event(LOGS, apps.get(node), str(record.seq), "created",
                                            payload, record.stamp_ns))

    def _apps(self) -> dict[str, str]:
        entities = self.state.cache.entities
        gen, index = self._index
        if gen != entities.generation:
            index = {a.node_fqn: a.id for a in entities.apps.values() if a.node_fqn}
            self._index = (entities.generation, index)
        return index


def watch_execution(state: GatewayState, app_id: str | None, ex: Any) -> None:
    """Publish an action goal's start and, when its result arrives, its completion."""
    bus = state.events
    if not bus.has_listeners(OPERATIONS):
        return
    bus.publish(operation_event(app_id, ex.id, ex.action, ex.status, "started"))
    task = ex.result_task
    if task is None:  # rejected: finished at once
        bus.publish(operation_event(app_id, ex.id, ex.action, ex.status, "completed"))
        return

    def done(_t: asyncio.Task[None]) -> None:
        bus.publish(operation_event(app_id, ex.id, ex.action, ex.status, "completed"))

    task.add_done_callback(done)


def service_completed(state: GatewayState, app_id: str | None, path: str, ok: bool) -> None:
    """Publish a service call's completion."""
    bus = state.events
    if bus.has_listeners(OPERATIONS):
        bus.publish(Event(OPERATIONS, app_id, path, "completed",
                          {"service_path": path, "status": "completed" if ok else "failed"}))


def parameter_changed(state: GatewayState, node: str, names: list[str]) -> None:
    """Publish parameter changes of a node (on the loop)."""
    entities = state.cache.entities
    app_id = next((a.id for a in entities.apps.values() if a.node_fqn == node), None)
    for name in names:
        state.events.publish(Event(CONFIGURATIONS, app_id, name, "updated",
                                   {"node": node, "parameter": name}))
