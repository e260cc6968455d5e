"""Topics that subscriptions, triggers and fault triggers observe, kept in the sample pool."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model.resource_uris import topic_matches

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Want:
    entity_type: str
    entity_id: str
    path: str  # '/...' resource path naming the topic
    events: bool  # publish every sample on the bus (triggers, fault triggers)
    topic: tuple[str, str] | None = None  # (topic, type) once resolved


class TopicWatch:
    """Resolves observed topic paths on their entities and pins those topics in the pool.

    The pool publishes the samples of topics that a trigger or fault trigger observes on the
    bus as DATA events (converted once, when first read); topics only sampled by cyclic
    subscriptions are just kept fresh.
    """

    def __init__(self, state: GatewayState) -> None:
        self.state = state
        self._wants: dict[object, _Want] = {}
        self.watched: dict[str, str] = {}  # topic -> type pinned in the pool
        self.evented: set[str] = set()  # watched topics whose samples go on the bus
        self.version = 0  # bumped whenever a want is resolved, added or dropped
        self._pending: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one reconcile at a time (pins are counted)

    def want(self, owner: object, entity_type: str, entity_id: str, path: str,
             events: bool) -> None:
        """Observe the topic a resource path names on an entity (resolved now or later)."""
        self._wants[owner] = _Want(entity_type, entity_id, path, events)
        self.version += 1
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self.reconcile())

    def drop(self, owner: object) -> None:
        """Stop observing for owner (the topic is unpinned at the next reconcile)."""
        if self._wants.pop(owner, None) is not None:
            self.version += 1

    def topic_of(self, owner: object) -> str | None:
        """The resolved topic of owner, if any."""
        want = self._wants.get(owner)
        return want.topic[0] if want is not None and want.topic is not None else None

    def resolved(self, owner: object) -> tuple[str, str] | None:
        """(topic, type) of owner once resolved and pinned."""
        want = self._wants.get(owner)
        if want is None or want.topic is None or want.topic[0] not in self.watched:
            return None
        return want.topic

    def _resolve(self, want: _Want) -> tuple[str, str] | None:
        from ..data.topics import (  # noqa: PLC0415 - gateway.ros, aiohttp only on a topic watch
            entity_topics,
        )

        entity = self.state.cache.entities.get(want.entity_type, want.entity_id)
        if entity is None:
            return None
        topics = entity_topics(self.state, entity)
        member, sep, item = want.path[1:].partition(":")
        if sep and item.startswith("/"):  # `<app id>:<topic>`: that member's topic only
            ref = topics.get(item)
            return (ref.topic, ref.type) if ref is not None and member in ref.member_ids \
                else None
        ref = topics.get(want.path)
        if ref is None:
            matches = [r for t, r in topics.items() if topic_matches(t, want.path)]
            if len(matches) != 1:
                return None
            ref = matches[0]
        return ref.topic, ref.type

    async def reconcile(self) -> None:
        """Resolve unresolved wants, pin their topics, unpin topics nobody wants."""
        async with self._lock:
            await self._reconcile()

    async def _reconcile(self) -> None:
        pool = self.state.pool
        if pool is None:
            return
        needed: dict[str, str] = {}
        evented: set[str] = set()
        for want in list(self._wants.values()):
            if want.topic is None:
                want.topic = self._resolve(want)
                if want.topic is not None:
                    self.version += 1
            if want.topic is not None:
                needed.setdefault(*want.topic)
                if want.events:
                    evented.add(want.topic[0])
        self.evented = evented
        for topic, type_name in needed.items():
            if self.watched.get(topic) == type_name:
                continue
            try:
                await pool.watch(topic, type_name)
            except Exception as exc:
                log.warning("cannot observe %s (%s): %s", topic, type_name, exc)
                continue
            self.watched[topic] = type_name
        for topic in [t for t in self.watched if t not in needed]:
            del self.watched[topic]
            pool.unwatch(topic)
        for topic in self.watched:
            pool.publish_samples(topic, self.state.events if topic in evented else None)
