"""Fault manager upkeep on the event loop: entity of a fault, action topics, dedup pruning."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from .bridges import ACTION_STATUS_SUFFIX, RosBridges
from .model import FaultRecord
from .scope import owns
from .settings import FaultSettings
from .store import FaultStore

if TYPE_CHECKING:
    from ..http.state import GatewayState
    from ..model.entities import EntitySet

log = logging.getLogger(__name__)

DEDUP_PRUNE_INTERVAL_S = 600.0
ACTION_REFRESH_S = 1.0



class EntityIndex:
    """Node name -> app id of the current entity set, rebuilt when its generation changes."""

    def __init__(self) -> None:
        self._generation = -1
        self._apps: dict[str, str] = {}

    def entity_of(self, entities: EntitySet, fault: FaultRecord) -> tuple[str, str] | None:
        """The app owning the fault's first source, resolved now (fixed in the event)."""
        if not fault.sources:
            return None
        index = self._apps
        if self._generation != entities.generation or not index:
            index = {a.node_fqn: a.id for a in entities.apps.values() if a.node_fqn}
            self._generation, self._apps = entities.generation, index
        source = fault.sources[0]
        app_id = index.get(source)
        if app_id is None:
            owners = [fqn for fqn in index if owns(fqn, source)]
            if not owners:
                return None
            app_id = index[max(owners, key=len)]
        return "app", app_id


async def action_topics_loop(state: GatewayState, bridges: RosBridges | None) -> None:
    """Subscribe to the status topic of every action that appears in the graph."""
    assert bridges is not None
    seen_gen = -1
    while True:
        cache = state.cache
        if cache.generation != seen_gen:
            seen_gen = cache.generation
            topics = [t for t in cache.graph.topics if t.endswith(ACTION_STATUS_SUFFIX)]
            new = [t for t in topics if t not in bridges.action_subs]
            if new:
                try:
                    await state.bridge.run(bridges.refresh_actions, new,
                                           what="subscribing to action status")
                except Exception:
                    log.warning("action status subscription failed", exc_info=True)
        await asyncio.sleep(ACTION_REFRESH_S)


async def dedup_prune_loop(svc: Any) -> None:
    """Forget reporter sequence numbers older than faults.dedup_retention_sec."""
    retention_ns = int(svc.state.settings.typed(FaultSettings.from_settings).dedup_retention_sec
                       * 1e9)
    while True:
        await asyncio.sleep(DEDUP_PRUNE_INTERVAL_S)
        cutoff = time.time_ns() - retention_ns
        for reporter, seq in await svc.writer.call(FaultStore.dedup_keys_before, cutoff):
            seen = svc.dedup.get(reporter)
            if seen is not None:
                seen.discard(seq)
                if not seen:
                    del svc.dedup[reporter]
        await svc.writer.call(FaultStore.prune_dedup, cutoff)
