"""Sites: a site primary (aggregation.reexport) is itself a peer of a fleet primary.

It declares its merged set (its robots' entities with its own fleet ids) to the primary
above, and answers that primary's calls, which are marked no-fan-out, for its whole site
(`FederationService.no_fan_out`): merged reads, forwarding, the fault stream, triggers,
locks and downloads then pass through two levels. The fleet primary renames only on
collisions, so an id is qualified by the site's renaming or the fleet's, not both, unless
both collide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..http.state import GatewayState
from ..model.entities import EntitySet

if TYPE_CHECKING:
    from .service import FederationService


def declared(state: GatewayState) -> tuple[EntitySet, int]:
    """The entity set this gateway declares to a primary, and its generation."""
    fed: FederationService | None = state.aggregation
    cache = state.cache
    if fed is not None and fed.settings.reexport:
        return cache.entities, cache.generation
    return cache.local, cache.local_generation
