"""The spec's scope rule: a fault belongs to an entity when the entity owns every source."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def owns(owner: str, source: str) -> bool:
    """True when source is the owner node itself or a path child of it."""
    owner = owner.rstrip("/")
    return bool(owner) and (source == owner or source.startswith(owner + "/"))


def in_scope(sources: Sequence[str], owners: Iterable[str]) -> bool:
    """Every reporting source is owned by one of the entity's nodes (and there is a source)."""
    owner_list = [o for o in owners if o]
    return bool(sources) and bool(owner_list) and all(
        any(owns(o, s) for o in owner_list) for s in sources)
