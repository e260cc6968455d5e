"""Entity cache: the current entity set and graph, a generation counter, cached bodies.

`local` is the set discovered on this robot; `entities` is the set served, which is the local
set merged with the peers' when aggregation is on (`merger`, set by the federation service).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..events import ENTITIES, EntitiesChanged, Event, EventBus
from ..model.entities import EntitySet
from ..ros.graph.snapshot import GraphSnapshot
from . import runtime


class EntityCache:
    """Holds one consistent (graph, entities) pair; bodies built from it are cached (LRU)."""

    def __init__(self, capacity: int, host: runtime.HostInfo,
                 events: EventBus | None = None) -> None:
        self.capacity = capacity
        self.host = host
        self.events = events  # each rebuilt set is announced on it (ENTITIES, "rebuilt")
        self.graph = GraphSnapshot()
        self.entities = EntitySet()
        self.local = self.entities
        self.generation = 0
        self.local_generation = 0  # bumps only when the local graph changes (peers sync on it)
        self.merger: Callable[[EntitySet, int], EntitySet] | None = None
        # manifest-backed modes build from the manifest (discovery/pipeline.py); else runtime
        self.builder: Callable[[GraphSnapshot, int], EntitySet] | None = None
        self.refreshed_ns = 0
        self.refreshes = 0
        self._bodies: OrderedDict[Any, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.collisions: list[tuple[str, list[str]]] = []
        # Extra discovery layers (plugin entities): each adds to a freshly built local set.
        self.layers: list[Callable[[EntitySet], None]] = []

    def apply(self, graph: GraphSnapshot, cause: str = "graph") -> None:
        """Rebuild entities from a new graph snapshot; bumps the generation."""
        self.generation += 1
        self.local_generation += 1
        nodes = [runtime.NodeRef(n.name, n.namespace) for n in graph.nodes]
        if self.builder is not None:
            self.local = self.builder(graph, self.generation)
        else:
            self.local = runtime.build(nodes, self.host, self.generation)
        for layer in self.layers:
            layer(self.local)
        self.entities = self.merger(self.local, self.generation) if self.merger else self.local
        self.graph = graph
        self.refreshed_ns = time.time_ns()
        self.refreshes += 1
        self._bodies.clear()
        by_name: dict[str, list[str]] = {}
        for n in nodes:
            by_name.setdefault(n.name, []).append(n.fqn)
        self.collisions = [(k, v) for k, v in sorted(by_name.items()) if len(v) > 1]
        if self.builder is not None:  # manifest modes: only unlinked nodes get prefixed ids
            runtime_fqns = {a.node_fqn for a in self.local.apps.values()
                            if a.source == "heuristic"}
            self.collisions = [(k, v) for k, v in self.collisions
                               if runtime_fqns.intersection(v)]
        self._announce(cause)

    def rebuild(self) -> None:
        """The manifest changed: rebuild from the current graph; bumps the generation."""
        self.apply(self.graph, "manifest")

    def reapply(self) -> None:
        """A layer changed: rebuild from the current graph; bumps the generation."""
        self.apply(self.graph, "layers")

    def remerge(self) -> None:
        """The peers changed: rebuild the served set from the local one; bumps the generation."""
        if self.merger is None:
            return
        self.generation += 1
        self.entities = self.merger(self.local, self.generation)
        self._bodies.clear()
        self._announce("peers")

    def _announce(self, cause: str) -> None:
        """The rebuilt set on the bus (loop only), resource the cause: graph, manifest,
        layers or peers."""
        events = self.events
        if events is not None and events.has_listeners(ENTITIES):
            events.publish(Event(ENTITIES, None, cause, "rebuilt",
                                 EntitiesChanged(self.generation)))

    def body(self, key: Any, build: Callable[[], Any]) -> Any:
        """A value built once per generation and key (e.g. a serialized list body)."""
        try:
            value = self._bodies[key]
        except KeyError:
            self.misses += 1
            value = self._bodies[key] = build()
            if len(self._bodies) > self.capacity:
                self._bodies.popitem(last=False)
            return value
        self.hits += 1
        return value

    def cached(self, key: Any) -> Any:
        """The value body() holds for key (counted as a hit), else None (nothing counted)."""
        value = self._bodies.get(key)
        if value is not None:
            self.hits += 1
        return value

    def stats(self) -> dict[str, Any]:
        """Figures for /health's entity-cache block."""
        return {
            "generation": self.generation,
            "entities": self.entities.total(),
            "capacity": self.capacity,
            "size": len(self._bodies),
            "hits": self.hits,
            "misses": self.misses,
            "refreshes": self.refreshes,
            "last_refresh_ns": self.refreshed_ns,
        }
