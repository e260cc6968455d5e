"""Cyclic sampling: one timer per interval class delivers each subscription's current value."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import orjson

from ..data.reads import reads_of  # the JSON cache data reads use
from ..events import CONFIGURATIONS, Event
from ..faults import views
from ..faults.model import DEFAULT_FILTER
from ..faults.scope import owners
from ..logs.members import members_of
from .cadence import DeliveryCount, next_due
from .model import Subscription, iso_ms
from .rules import INTERVALS
from .sse import data_frame, error_frame
from .wire import PUSH, payload_items

log = logging.getLogger(__name__)

SNAPSHOT_MAX_AGE_S = 1.0  # collections read through ROS services are refreshed this often


class CyclicSampler:
    """Timers for the fast, normal and slow intervals, and the collection snapshots they read."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.state = engine.state
        self.ticks = 0
        self.frames = 0
        self.delivery = DeliveryCount()  # frames delivered against intervals due
        # (collection, entity_type, entity_id) -> (taken at, items) for collections read
        # through ROS services; refreshed in the background.
        self._snapshots: dict[tuple[str, str, str], tuple[float, list[Any]]] = {}
        self._refreshing: dict[tuple[str, str, str], asyncio.Task[None]] = {}
        self._off = self.state.events.subscribe([CONFIGURATIONS], self._on_config)
        self._wanted = {name: asyncio.Event() for name in INTERVALS}  # set: a timer is due

    def start(self) -> list[asyncio.Task[None]]:
        """One task per interval class."""
        return [asyncio.ensure_future(self._run(name, period))
                for name, period in INTERVALS.items()]

    def want(self, interval: str) -> None:
        """A subscription of this interval class exists: its timer runs."""
        self._wanted[interval].set()

    async def _run(self, name: str, period: float) -> None:
        loop = asyncio.get_running_loop()
        wanted = self._wanted[name]
        due = loop.time() + period
        skipped = 0
        try:
            while True:
                # No subscription of this class: no timer either (an idle gateway sleeps).
                if not any(s.interval == name for s in self.engine.subscriptions.values()):
                    wanted.clear()
                    await wanted.wait()
                    due, skipped = loop.time() + period, 0
                # A late tick runs at once (one loop turn each: the value is the newest then);
                # cadence.next_due bounds the catch-up and counts what a stall skipped.
                await asyncio.sleep(max(0.0, due - loop.time()))
                self._tick(name, skipped)
                due, skipped = next_due(due, period, loop.time())
        finally:
            self._off()

    def _tick(self, name: str, skipped: int = 0) -> None:
        now = time.time()
        stamp = iso_ms(now)
        built: dict[tuple[str, ...], bytes | None] = {}
        links = self.engine.links
        frames = 0
        for sub in tuple(self.engine.subscriptions.values()):
            if sub.interval != name or sub.channel is None or not sub.channel.connected:
                continue
            if sub.expired(now):
                self.engine.remove_subscription(sub)
                continue
            key: tuple[str, ...] = (sub.ref.collection, sub.entity_type, sub.entity_id,
                                    sub.ref.path)
            if links is not None and links.of(sub):
                key = (*key, sub.id)  # merged with its own peer copies
            if key not in built:
                built[key] = self._frame(sub, stamp)
            raw = built[key]
            if raw is not None:
                sub.channel.send(raw)
                frames += 1
        self.frames += frames
        self.delivery.tick(frames, skipped)
        self.ticks += 1

    def health(self) -> dict[str, float | int]:
        """Cyclic delivery for /health: intervals due, frames delivered, their share."""
        return self.delivery.health()

    def _frame(self, sub: Subscription, stamp: str) -> bytes | None:
        """The frame of a subscription's current value; None when there is none yet.

        On a mixed entity the newest items of its peer copies join the local ones (a data
        topic the local members lack comes from a peer).
        """
        col = sub.ref.collection
        links = self.engine.links
        peers = [link.latest for link in links.of(sub) if link.has_latest] if links else []
        try:
            if col == "data":
                raw = self._data_frame(sub, stamp)
                if raw is None and peers:
                    raw = data_frame({"timestamp": stamp, "payload": peers[0]})
                return raw
            items = self._items(sub)
        except Exception as exc:
            log.warning("sampling %s failed", sub.ref.uri, exc_info=True)
            return error_frame("internal-error", f"sampling {sub.ref.uri} failed: {exc}")
        for payload in peers:
            relayed = payload_items(payload)
            if relayed is not None:
                items = [*(items or ()), *relayed]
        if items is None:
            return None
        return data_frame({"timestamp": stamp,
                           "payload": self.state.serializer(PUSH).collection_payload(col, items)})

    def _data_frame(self, sub: Subscription, stamp: str) -> bytes | None:
        resolved = self.engine.topics.resolved(sub)
        if resolved is None:
            return None
        topic, type_name = resolved
        entry = self.state.pool.peek(topic, type_name)
        if entry is None:
            return None
        from ..ros.topics.samples import sample_to_json  # noqa: PLC0415 - rclpy only once ROS runs

        sample = entry.sample
        if sample is None:  # peek returns only entries holding a sample
            return None
        js = reads_of(self.state).sample_json(entry, sample, sample_to_json)
        return data_frame({"timestamp": stamp,
                           "payload": {"id": topic, "data": orjson.Fragment(js)}})

    def _items(self, sub: Subscription) -> list[Any] | None:
        state = self.state
        entity = state.cache.entities.get(sub.entity_type, sub.entity_id)
        if entity is None:
            return None
        col = sub.ref.collection
        if col == "faults":
            svc = self.engine.faults
            return [views.list_item(svc.wire, f)
                    for f in svc.select(DEFAULT_FILTER, owners(svc, entity))]
        if col == "logs":
            from ..ros.topics.rosout import (  # noqa: PLC0415 - rclpy only once ROS runs
                entry,
                logger_to_node,
                select,
            )

            rosout = state.rosout
            config = self.engine.log_configs.of(entity)
            loggers, records = rosout.snapshot()
            fqns = frozenset(n.fqn for n in state.cache.graph.nodes)
            nodes = {name: logger_to_node(name, fqns) for name in loggers}
            members, prefix = members_of(state, entity)
            picked = select(records, nodes, members, prefix, config["severity_filter"],
                            config["max_entries"])
            return [entry(r, nodes[r.logger]) for r in picked]
        return self._snapshot(col, entity)

    def _snapshot(self, col: str, entity: Any) -> list[Any] | None:
        key = (col, entity.kind, entity.id)
        taken = self._snapshots.get(key)
        fresh = taken is not None and time.monotonic() - taken[0] < SNAPSHOT_MAX_AGE_S
        if not fresh and key not in self._refreshing:
            task = asyncio.ensure_future(self._refresh(key, col, entity))
            self._refreshing[key] = task
            task.add_done_callback(lambda _t: self._refreshing.pop(key, None))
        return taken[1] if taken is not None else None

    async def _refresh(self, key: tuple[str, str, str], col: str, entity: Any) -> None:
        try:
            if col == "configurations":
                from ..configurations.listing import (  # noqa: PLC0415 - rclpy only once ROS runs
                    local_items,
                )

                items = (await local_items(self.state, entity))[0]
            else:
                provider = self.engine.collections.get(col)
                if provider is None:
                    return
                value = await provider(self.state, entity)  # a plugin sampler: any JSON
                items = list(value) if isinstance(value, (list, tuple)) else value
        except Exception:
            log.debug("refreshing %s of %s failed", col, entity.id, exc_info=True)
            return
        self._snapshots[key] = (time.monotonic(), items)

    def _on_config(self, event: Event) -> None:
        """A parameter changed: configuration snapshots of its entities go stale."""
        for key in list(self._snapshots):
            if key[0] == "configurations" and event.entity_id in self.engine.members(key[1],
                                                                                  key[2]):
                taken = self._snapshots[key]
                self._snapshots[key] = (0.0, taken[1])
