"""What other features add to the fault manager: clear filters and guards, snapshot providers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ..model.entities import Entity, EntitySet

# A fault-clear hook: (request, fault_code, sources) -> True when the clear must skip the fault.
ClearFilter = Callable[[web.Request, str, list[str]], bool]
# A clear through a parent: (request, parent entity, sources) -> raises to refuse it (409).
ClearGuard = Callable[[web.Request, Any, Any], None]
# The fault sources of an entity beyond its member apps' nodes (plugin entities).
EntitySources = Callable[[Entity, EntitySet], list[str]]
# Extra snapshot entries of a fault's detail: (state, entity, fault) -> entries.
SnapshotProvider = Callable[[Any, Entity, Any], list[dict[str, Any]]]


@dataclass
class FaultHooks:
    """The registries the locks, bulk-data and plugins features fill when the app is made."""

    clear_filters: list[ClearFilter] = field(default_factory=list)
    clear_guards: list[ClearGuard] = field(default_factory=list)
    snapshot_providers: list[SnapshotProvider] = field(default_factory=list)
    entity_sources: list[EntitySources] = field(default_factory=list)

    def guard_clear(self, request: web.Request, via: Any, sources: Any) -> None:
        """Refuse (409, raised by a guard) a clear through `via` that reaches a locked member."""
        for guard in self.clear_guards:
            guard(request, via, sources)
