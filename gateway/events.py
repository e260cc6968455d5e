"""One event bus: every change (data sample, fault, execution, update, log, lock) published once.

Publishers call `publish` on the event loop; listeners (cyclic subscriptions, triggers, fault
triggers, the fault stream, the dashboard) are plain callables run in publish order. A listener
must not block: it copies what it needs into its own bounded queue. A listener that raises is
logged and kept; it never stops the publisher or the other listeners.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
KINDS = frozenset({DATA, FAULTS, OPERATIONS, CONFIGURATIONS, UPDATES, LOGS, LOCKS, ENTITIES})


@dataclass(frozen=True)
class Event:
    """One change: `kind` collection, owning entity, resource id within it, change word, payload."""

    kind: str
    entity_id: str | None  # owning app or component id; None for server-level resources
    resource: str  # topic name, fault code, execution id, update id, lock id, ...
    change: str  # "sample", "created", "updated", "cleared", "completed", "expired", ...
    payload: Any = None
    timestamp_ns: int = field(default_factory=time.time_ns)


Listener = Callable[[Event], None]


class EventBus:
    """Listeners by kind; `publish` delivers synchronously, in subscription order."""

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
            self._by_kind[kind].append(listener)

        def unsubscribe() -> None:
            for kind in chosen:
                try:
                    self._by_kind[kind].remove(listener)
                except ValueError:
                    pass

        return unsubscribe

    def has_listeners(self, kind: str) -> bool:
        """Whether any listener wants `kind` (lets publishers skip building payloads)."""
        return bool(self._by_kind.get(kind))

    def publish(self, event: Event) -> None:
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
