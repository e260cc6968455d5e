"""The spec's scope rule: a fault belongs to an entity when the entity owns every source."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.entities import Entity
    from .service import FaultService


def owns(owner: str, source: str) -> bool:
    """True when source is the owner node itself or a path child of it."""
    owner = owner.rstrip("/")
    return bool(owner) and (source == owner or source.startswith(owner + "/"))


def in_scope(sources: Sequence[str], owners: Iterable[str]) -> bool:
    """Every reporting source is owned by one of the entity's nodes (and there is a source)."""
    owner_list = [o for o in owners if o]
    return bool(sources) and bool(owner_list) and all(
        any(owns(o, s) for o in owner_list) for s in sources)


def owners(svc: FaultService, entity: Entity) -> list[str]:
    """Node names an entity owns (its member apps), and sources of its plugin entities."""
    entities = svc.state.cache.entities
    out = [a.node_fqn for a in entities.member_apps(entity) if a.node_fqn]
    for sources in svc.hooks.entity_sources:  # docs/plugins.md: faults plugins raise
        out += sources(entity, entities)
    return out
