"""The one event bus: every change is published once, on the event loop.

Publishers call `publish` on the loop (a ROS thread hands its changes over first, and only
while `has_listeners` says someone wants them); listeners (the recorder, push triggers and
subscriptions, fault triggers, the dashboard, plugins) are plain callables run in subscription
order. A listener must not block: it copies what it needs into its own bounded queue. A
listener that raises is logged and kept; it never stops the publisher or the other listeners.

An event's kind is the wire's collection that changed (or `graph`: the ROS graph the entity
set is built from); its payload is a typed change (a `Payload`: the fault change, the data
sample, the log record, the entity set, the graph snapshot) or, for kinds
whose publishers send the wire body itself (operations, updates, locks, configurations, and
what plugins publish), that JSON body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

# Event kinds (the collection that changed).
DATA = "data"
FAULTS = "faults"
OPERATIONS = "operations"
CONFIGURATIONS = "configurations"
UPDATES = "updates"
LOGS = "logs"
LOCKS = "locks"
ENTITIES = "entities"
GRAPH = "graph"  # the ROS graph changed (a new snapshot): not a collection, no trigger sees it
KINDS = frozenset({DATA, FAULTS, OPERATIONS, CONFIGURATIONS, UPDATES, LOGS, LOCKS, ENTITIES,
                   GRAPH})

P = TypeVar("P")


class Payload:
    """A typed change; `body()` is the JSON a trigger evaluates and delivers (None: nothing)."""

    __slots__ = ()

    def body(self) -> Any:
        """The wire body of this change, None when a trigger has nothing to observe."""
        raise NotImplementedError


@dataclass(frozen=True)
class Event(Generic[P]):
    """One change: `kind` collection, owning entity, resource id within it, change word, payload."""

    kind: str
    entity_id: str | None  # owning app or component id; None: not one entity's (or resolved
    #                        by the listener, as a log record's logger)
    resource: str  # topic name, fault code, execution id, update id, lock id, ...
    change: str  # "sample", "created", "updated", "cleared", "completed", "expired", ...
    payload: P
    timestamp_ns: int = field(default_factory=time.time_ns)


def body_of(event: Event[Any]) -> Any:
    """The JSON a trigger sees of an event: a typed payload's body, else the payload itself."""
    payload = event.payload
    return payload.body() if isinstance(payload, Payload) else payload


@dataclass(frozen=True)
class EntitiesChanged(Payload):
    """The served entity set was rebuilt (`generation` is the entity cache's new one)."""

    generation: int

    def body(self) -> dict[str, int]:
        """The generation, as the manifest reload has always published it."""
        return {"generation": self.generation}


@dataclass(frozen=True)
class GraphChanged(Payload):
    """A new snapshot of the ROS graph (ros/graph/snapshot.py GraphSnapshot), published by the
    graph poller on each change, before the entity set is rebuilt from it."""

    snapshot: Any

    def body(self) -> None:
        """Nothing a trigger observes."""
        return None


Listener = Callable[[Event[Any]], None]


class EventBus:
    """Listeners by kind; `publish` delivers synchronously, in subscription order (loop only)."""

    def __init__(self) -> None:
        self._by_kind: dict[str, list[Listener]] = {k: [] for k in KINDS}
        self.published = 0
        self.listener_errors = 0

    def subscribe(self, kinds: Iterable[str], listener: Listener) -> Callable[[], None]:
        """Call `listener` for every event of `kinds`; returns the function that unsubscribes."""
        chosen = tuple(kinds)
        for kind in chosen:
            if kind not in self._by_kind:
                raise ValueError(f"unknown event kind {kind!r}; known: {sorted(KINDS)}")
        for kind in chosen:
            self._by_kind[kind].append(listener)

        def unsubscribe() -> None:
            for kind in chosen:
                try:
                    self._by_kind[kind].remove(listener)
                except ValueError:
                    pass

        return unsubscribe

    def has_listeners(self, kind: str) -> bool:
        """Whether any listener wants `kind`: publishers build nothing otherwise (a plain read,
        safe from a ROS thread)."""
        return bool(self._by_kind.get(kind))

    def publish(self, event: Event[Any]) -> None:
        """Deliver `event` to the listeners of its kind."""
        listeners = self._by_kind.get(event.kind)
        if listeners is None:
            raise ValueError(f"unknown event kind {event.kind!r}")
        self.published += 1
        for listener in tuple(listeners):
            try:
                listener(event)
            except Exception:
                self.listener_errors += 1
                log.exception("event listener %r failed on %s/%s", listener, event.kind,
                              event.resource)

    def stats(self) -> dict[str, int]:
        """Figures for /health."""
        return {"published": self.published, "listener_errors": self.listener_errors,
                "listeners": sum(len(v) for v in self._by_kind.values())}
