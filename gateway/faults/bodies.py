"""Serialized fault list bodies, kept while the fault state (and entity set) they show holds."""

from __future__ import annotations

from collections.abc import Hashable

MAX_BODIES = 256


class BodyCache:
    """Body bytes by key, each valid for one generation tuple; bounded, cleared when full."""

    def __init__(self, capacity: int = MAX_BODIES) -> None:
        self.capacity = capacity
        self._bodies: dict[Hashable, tuple[Hashable, bytes]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, generation: Hashable) -> bytes | None:
        """The body stored for key at this generation, else None."""
        entry = self._bodies.get(key)
        if entry is not None and entry[0] == generation:
            self.hits += 1
            return entry[1]
        self.misses += 1
        return None

    def cached(self, key: Hashable, generation: Hashable) -> bytes | None:
        """What get returns, counting a hit but no miss (a fast-path probe's look)."""
        entry = self._bodies.get(key)
        if entry is not None and entry[0] == generation:
            self.hits += 1
            return entry[1]
        return None

    def put(self, key: Hashable, generation: Hashable, body: bytes) -> bytes:
        """Store and return body."""
        if len(self._bodies) >= self.capacity and key not in self._bodies:
            self._bodies.clear()
        self._bodies[key] = (generation, body)
        return body
