"""Local item providers: how a collection lists this gateway's own items for one entity.

Resource modules register one per collection; the forwarder uses them to resolve a bare item
id across the fleet (spec item-id rule 6) without importing ROS-facing code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

LocalItems = Callable[[Any, Any], Awaitable[list[dict[str, Any]]]]  # (state, entity) -> items
PROVIDERS: dict[str, LocalItems] = {}


def provide(collection: str, items: LocalItems) -> None:
    """Register the local item lister of a collection."""
    PROVIDERS[collection] = items
