"""What one flush, clear or auto-confirm changed: records, events, captures, clears."""

from __future__ import annotations

from .model import FaultRecord


class FaultBatch:
    """Changes collected on the event loop, then committed and published together."""

    __slots__ = ("changed", "events", "captures", "cleared", "visited", "correlation_dirty")

    def __init__(self) -> None:
        self.changed: dict[str, FaultRecord] = {}
        self.events: list[tuple[str, str, tuple[str, ...]]] = []
        self.captures: list[str] = []
        self.cleared: list[str] = []
        self.visited: set[str] = set()
        self.correlation_dirty = False
