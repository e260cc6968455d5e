"""Publishers feeding the bus from action goals and parameter events; the view of a log."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..events import CONFIGURATIONS, OPERATIONS, Event
from ..ros.topics.rosout import ReceivedLog, entry, logger_to_node

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)


def operation_event(app_id: str | None, goal_id: str, action: str, status: str,
                    change: str) -> Event[dict[str, Any]]:
    """The bus event of an action goal's status change."""
    return Event(OPERATIONS, app_id, action, change,
                 {"goal_id": goal_id, "action_path": action, "status": status})


class LogView:
    """What a log trigger sees of a received /rosout record: its app and the spec's entry."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state
        self._nodes: tuple[object, frozenset[str]] = (None, frozenset())  # graph, node fqns
        self._apps: tuple[int, dict[str, str]] = (-1, {})  # entity generation, fqn -> app

    def view(self, received: ReceivedLog) -> tuple[str | None, dict[str, Any]]:
        """(owning app id or None, log entry body) against the current graph and entities."""
        record = received.record
        node = logger_to_node(record.logger, self._node_fqns())
        payload = entry(record, node)
        payload["id"] = f"log_{record.seq}"
        return self._app_index().get(node), payload

    def _node_fqns(self) -> frozenset[str]:
        graph = self.state.cache.graph
        seen, fqns = self._nodes
        if seen is not graph:
            fqns = frozenset(n.fqn for n in graph.nodes)
            self._nodes = (graph, fqns)
        return fqns

    def _app_index(self) -> dict[str, str]:
        entities = self.state.cache.entities
        gen, index = self._apps
        if gen != entities.generation:
            index = {a.node_fqn: a.id for a in entities.apps.values() if a.node_fqn}
            self._apps = (entities.generation, index)
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
