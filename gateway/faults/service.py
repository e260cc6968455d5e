"""The fault manager inside the gateway: ingestion, persistence, correlation, frames, stream."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Collection, Iterable
from typing import Any

import orjson

from ..ros.samples import sample_to_json
from . import manager, views
from .bridges import ACTION_STATUS_SUFFIX, RosBridges
from .correlation import CorrelationConfig, CorrelationConfigError, CorrelationEngine, load_config
from .manager import Change, DebounceConfig
from .model import CLEARED, CONFIRMED, PREFAILED, FaultRecord, Report
from .reporter import ACK_TOPIC, QUEUE_DEPTH, REPORT_TOPIC, decode_reports, encode_ack
from .scope import in_scope, owns
from .snapshots import (
    SnapshotConfig,
    SnapshotConfigError,
    select_topics,
    stored_frame,
)
from .snapshots import load_config as load_snapshot_config
from .store import FaultStore, StateDirLock, open_store
from .stream import FaultStream, SseSlots

log = logging.getLogger(__name__)

# (reporter id or None for bridge reports, sequence number, report)
Item = tuple[str | None, int, Report]

DEDUP_PRUNE_INTERVAL_S = 600.0
ACTION_REFRESH_S = 1.0
OFFLOOP_BYTES = 64 * 1024
CAPTURE_GRAPH_WAIT_S = 10.0


def _settings_debounce(s: Any) -> DebounceConfig:
    return DebounceConfig(
        confirmation_threshold=s["faults.confirmation_threshold"],
        healing_enabled=s["faults.healing_enabled"],
        healing_threshold=s["faults.healing_threshold"],
        critical_immediate_confirm=s["faults.critical_immediate_confirm"],
        auto_confirm_after_sec=s["faults.auto_confirm_after_sec"],
    ).validated()


class FaultService:
    """Owns every fault; all methods run on the event loop unless marked otherwise."""

    def __init__(self, state: Any) -> None:
        s = state.settings
        self.state = state
        self.xv: str = state.xv
        self.cfg = _settings_debounce(s)
        self.snapshots_enabled: bool = s["snapshots.enabled"]
        self.retain_on_clear: bool = s["snapshots.retain_on_clear"]
        self.snapshot_timeout_s: float = s["snapshots.timeout_sec"]
        try:
            self.snap_cfg = load_snapshot_config(s["snapshots.config_file"],
                                                 s.get("snapshots.default_topics"),
                                                 s["snapshots.entity_default"])
        except SnapshotConfigError as exc:
            log.error("setting 'snapshots.config_file': %s; capturing default topics only", exc)
            self.snap_cfg = SnapshotConfig(entity_default=s["snapshots.entity_default"])
        corr = CorrelationConfig()
        if s["correlation.config_file"]:
            try:
                corr = load_config(s["correlation.config_file"])
            except CorrelationConfigError as exc:
                log.error("setting 'correlation.config_file': %s; correlation is off", exc)
        self.engine = CorrelationEngine(corr)
        self.store: FaultStore | None = None
        self._lock: StateDirLock | None = None
        self.faults: dict[str, FaultRecord] = {}
        self.dedup: dict[str, set[int]] = {}
        self.stream: FaultStream | None = None
        self.bridges: RosBridges | None = None
        self._inbox: list[Item] = []
        self._rx: list[Item] = []  # filled by the executor thread
        self._rx_lock = threading.Lock()
        self._rx_scheduled = False
        self._flush_scheduled = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._captures: dict[str, asyncio.Task[Any]] = {}
        self._report_sub: Any = None
        self._ack_pub: Any = None
        self._entity_index: tuple[int, dict[str, str]] = (-1, {})
        self._stopped = False
        self.stats = {"reports_received": 0, "reports_applied": 0, "reports_duplicate": 0,
                      "bad_messages": 0, "flushes": 0, "events_published": 0,
                      "commits": 0, "commit_us_total": 0, "commit_us_max": 0}

    # lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the database, subscribe, start the background tasks."""
        s = self.state.settings
        self.store, self._lock = open_store(s["state_dir"])
        self.faults = self.store.load_faults()
        self.dedup = self.store.load_dedup()
        self.engine.load_state(self.store.get_meta("correlation", {}))
        slots = self.state.extras.get("sse_slots")
        if slots is None:
            slots = self.state.extras["sse_slots"] = SseSlots(s["sse.max_clients"])
        store = self.store
        self.stream = FaultStream(slots, s["sse.keepalive_sec"],
                                  int(store.get_meta("event_seq", 0)),
                                  persist=lambda seq: store.set_meta("event_seq", seq))
        # hook of the global clear: predicates (request, code, sources) -> True to skip
        self.state.extras.setdefault("fault_clear_filters", [])
        health = self.state.extras.setdefault("health", {})
        health["x-vendor-sse"] = slots.health
        health["x-vendor-fault-manager"] = self.health
        bridge = self.state.bridge
        await bridge.run(self._create_ros, what="creating the fault report subscription")
        loop = bridge.loop
        self.bridges = RosBridges(
            bridge.node, lambda reports: loop.call_soon_threadsafe(self.submit, reports),
            self._node_fqns,
            rosout=s["faults.rosout_bridge.enabled"],
            diagnostics=s["faults.diagnostics_bridge.enabled"],
            actions=s["faults.action_bridge.enabled"],
            diagnostics_topic=s["faults.diagnostics_bridge.topic"],
            code_map={k: str(v) for k, v in
                      s.section("faults.diagnostics_bridge.code_map.").items()},
            rosout_cooldown_s=s["faults.rosout_bridge.cooldown_sec"],
            report_canceled=s["faults.action_bridge.report_canceled"])
        await bridge.run(self.bridges.start, what="creating the fault bridge subscriptions")
        self._spawn(self._action_topics_loop())
        self._spawn(self._dedup_prune_loop())
        if self.cfg.auto_confirm_after_sec > 0:
            self._spawn(self._auto_confirm_loop())
        if self.snapshots_enabled:
            have = self.store.codes_with_snapshots()
            for f in self.faults.values():
                if f.status == CONFIRMED and f.code not in have:
                    self._capture(f.code, origin="startup")
        log.info("fault manager: %d faults loaded from %s", len(self.faults), self.store.path)

    def _create_ros(self) -> None:
        from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        node = self.state.bridge.node
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=QUEUE_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        self._String = String
        self._ack_pub = node.create_publisher(String, ACK_TOPIC, qos)
        self._report_sub = node.create_subscription(
            String, REPORT_TOPIC, self._on_report_msg, qos,
            callback_group=MutuallyExclusiveCallbackGroup())

    def _destroy_ros(self) -> None:
        node = self.state.bridge.node
        for fn, obj in ((node.destroy_subscription, self._report_sub),
                        (node.destroy_publisher, self._ack_pub)):
            if obj is not None:
                try:
                    fn(obj)
                except Exception:
                    log.debug("fault service teardown", exc_info=True)
        if self.bridges is not None:
            self.bridges.stop()

    async def on_shutdown(self, app: Any) -> None:
        """aiohttp on_shutdown: end open fault streams so the server stops without waiting."""
        if self.stream is not None:
            self.stream.end_all()

    async def stop(self) -> None:
        """Flush, cancel the tasks, unsubscribe and close the database."""
        if self._inbox:
            self._flush()
        self._stopped = True
        tasks = [*self._tasks, *self._captures.values()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.stream is not None:
            await self.stream.close()
        try:
            await self.state.bridge.run(self._destroy_ros, timeout=5.0)
        except Exception:
            log.debug("fault service teardown", exc_info=True)
        if self.store is not None:
            self.store.close()
        if self._lock is not None:
            self._lock.release()
        log.info("fault manager stopped")

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def health(self) -> dict[str, Any]:
        """The x-vendor-fault-manager block of /health."""
        active = sum(1 for f in self.faults.values() if f.status != CLEARED)
        return {"persistent": bool(self.store and self.store.persistent),
                "faults": len(self.faults), "active_faults": active, **self.stats}

    # ingestion ------------------------------------------------------------------------------
    def _on_report_msg(self, msg: Any) -> None:
        """Report topic callback (executor thread): decode, hand to the loop."""
        decoded = decode_reports(msg.data)
        if decoded is None:
            self.stats["bad_messages"] += 1
            return
        reporter, _source, reports = decoded
        items: list[Item] = [
            (reporter, r["seq"], Report(r["code"], r["event"], r["severity"],
                                        r["description"], r["source"]))
            for r in reports]
        loop = self.state.bridge.loop
        if not items or loop is None:
            return
        # Coalesce: one loop wake-up for however many messages arrive before it runs.
        with self._rx_lock:
            self._rx.extend(items)
            if self._rx_scheduled:
                return
            self._rx_scheduled = True
        loop.call_soon_threadsafe(self._drain_rx)

    def _drain_rx(self) -> None:
        with self._rx_lock:
            items, self._rx = self._rx, []
            self._rx_scheduled = False
        self._receive(items)

    def submit(self, reports: Iterable[Report]) -> None:
        """Reports of a drop-in source (no acknowledgement, no dedup)."""
        self._receive([(None, 0, r) for r in reports])

    def _receive(self, items: list[Item]) -> None:
        if self._stopped:
            return
        self.stats["reports_received"] += len(items)
        self._inbox.extend(items)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Apply everything received since the last flush in one transaction, then ack."""
        self._flush_scheduled = False
        items, self._inbox = self._inbox, []
        if not items or self.store is None:
            return
        now = time.time_ns()
        acks: dict[str, list[int]] = {}
        keys: list[tuple[str, int]] = []
        batch = _Batch()
        for reporter, seq, report in items:
            if reporter is not None:
                acks.setdefault(reporter, []).append(seq)
                seen = self.dedup.setdefault(reporter, set())
                if seq in seen:
                    self.stats["reports_duplicate"] += 1
                    continue
                seen.add(seq)
                keys.append((reporter, seq))
            self.stats["reports_applied"] += 1
            self._apply(report, now, batch)
        try:
            self._commit(batch, keys, now)
        except Exception:
            # Back to what the database holds; the reporters resend what was not acked.
            log.exception("fault database write failed; reports stay unacknowledged")
            self._reload()
            return
        self.stats["flushes"] += 1
        self._send_acks(acks)
        self._publish(batch, now)

    def _reload(self) -> None:
        assert self.store is not None
        try:
            self.faults = self.store.load_faults()
            self.dedup = self.store.load_dedup()
            self.engine.load_state(self.store.get_meta("correlation", {}))
        except Exception:
            log.exception("fault database unreadable; keeping the state in memory")

    def _apply(self, report: Report, now: int, batch: _Batch) -> None:
        fault, change = manager.apply(self.faults.get(report.code), report, now, self.cfg)
        if fault is None or change is None:
            return
        self.faults[fault.code] = fault
        batch.changed[fault.code] = fault
        if change.onset and self.engine.enabled:
            self.engine.on_onset(fault.code, fault.severity, now)
            batch.correlation_dirty = True
        self._note_change(fault, change, now, batch)

    def _note_change(self, fault: FaultRecord, change: Change, now: int, batch: _Batch) -> None:
        muted = self.engine.is_muted(fault.code)  # muted symptoms are not published
        if change.confirmed:
            if not muted:
                batch.events.append(("fault_confirmed", fault.code, ()))
            batch.captures.append(fault.code)
        elif change.cleared:
            # a healed root cause takes its symptoms with it, as a clear does
            auto = self._cascade(fault.code, now, batch, None) if self.engine.enabled else []
            if not muted:
                batch.events.append(("fault_cleared", fault.code, tuple(auto)))
        elif change.after == CONFIRMED and change.visible_change and not muted:
            batch.events.append(("fault_updated", fault.code, ()))

    def _cascade(self, code: str, now: int, batch: _Batch,
                 scope: Collection[str] | None) -> list[str]:
        """Correlation side of a clear: returns the symptom codes cleared with code."""
        auto = self.engine.on_clear(code, scope)
        batch.correlation_dirty = True
        done: list[str] = []
        for symptom in auto:
            f = self.faults.get(symptom)
            was_muted = self.engine.is_muted(symptom)
            if f is None or symptom in batch.visited:
                self.engine.on_clear(symptom, scope)
                continue
            batch.visited.add(symptom)
            change = manager.clear(f, now)
            more = self._cascade(symptom, now, batch, scope)
            if change is None:
                continue
            done.append(symptom)
            batch.changed[symptom] = f
            batch.cleared.append(symptom)
            if not was_muted:
                batch.events.append(("fault_cleared", symptom, tuple(more)))
        return done

    def _commit(self, batch: _Batch, keys: list[tuple[str, int]], now: int) -> None:
        assert self.store is not None and self.stream is not None
        start = time.perf_counter_ns()
        with self.store.transaction():
            if batch.changed:
                self.store.put_faults(batch.changed.values())
            if keys:
                self.store.put_dedup(keys, now)
            if batch.correlation_dirty:
                self.store.set_meta("correlation", self.engine.to_state())
            if batch.cleared and not self.retain_on_clear:
                self.store.delete_snapshots(batch.cleared)
            if batch.events:
                self.store.set_meta("event_seq", self.stream.reserve(len(batch.events)))
        us = (time.perf_counter_ns() - start) // 1000
        self.stats["commits"] += 1
        self.stats["commit_us_total"] += us
        self.stats["commit_us_max"] = max(self.stats["commit_us_max"], us)

    def _send_acks(self, acks: dict[str, list[int]]) -> None:
        if self._ack_pub is None:
            return
        for reporter, seqs in acks.items():
            try:
                self._ack_pub.publish(self._String(data=encode_ack(reporter, seqs)))
            except Exception:
                log.debug("ack publish failed", exc_info=True)

    def _publish(self, batch: _Batch, now: int) -> None:
        assert self.stream is not None
        for event_type, code, auto in batch.events:
            fault = self.faults[code]
            data = views.event(self.xv, event_type, fault, now, self._entity_of(fault), auto)
            self.stream.publish(event_type, data)
            self.stats["events_published"] += 1
        if self.snapshots_enabled:
            for code in batch.captures:
                self._capture(code)
        # Recorder hook (docs/recorder.md): listener(fault, confirmed_now) per changed fault.
        for listener in self.state.extras.get("fault_listeners", ()):
            for code, fault in batch.changed.items():
                listener(fault, code in batch.captures)

    # clearing -------------------------------------------------------------------------------
    def clear(self, codes: Iterable[str], scope: Collection[str] | None = None) -> list[str]:
        """Clear faults (DELETE); symptoms go with their root cause, only within scope if given.

        Returns every code that changed to CLEARED.
        """
        now = time.time_ns()
        batch = _Batch()
        for code in codes:
            f = self.faults.get(code)
            if f is None or code in batch.visited:
                continue
            batch.visited.add(code)
            muted = self.engine.is_muted(code)
            change = manager.clear(f, now)
            if change is None:
                continue
            batch.changed[code] = f
            batch.cleared.append(code)
            auto = self._cascade(code, now, batch, scope) if self.engine.enabled else []
            if not muted:
                batch.events.append(("fault_cleared", code, tuple(auto)))
        if not batch.changed:
            return []
        self._commit(batch, [], now)
        for code in batch.cleared:
            task = self._captures.pop(code, None)
            if task is not None and not self.retain_on_clear:
                task.cancel()
        self._publish(batch, now)
        return list(batch.cleared)

    # queries --------------------------------------------------------------------------------
    def get(self, code: str) -> FaultRecord | None:
        """One fault by code."""
        return self.faults.get(code)

    def select(self, statuses: Collection[str], owners: Iterable[str] | None = None
               ) -> list[FaultRecord]:
        """Faults with these statuses (in the owners' scope when given), most severe first."""
        owner_list = None if owners is None else list(owners)
        out = [f for f in self.faults.values() if f.status in statuses and (
            owner_list is None or in_scope(f.sources, owner_list))]
        out.sort(key=lambda f: (-f.severity, -f.last_ns, f.code))
        return out

    def visible(self, faults: list[FaultRecord]) -> list[FaultRecord]:
        """Faults not hidden by correlation (muted symptoms, non-representative members)."""
        if not self.engine.enabled:
            return faults
        hidden = self.engine.hidden()
        return [f for f in faults if f.code not in hidden]

    def frames(self, code: str) -> list[dict[str, Any]]:
        """Stored freeze frames of a fault."""
        return self.store.snapshots(code) if self.store is not None else []

    def correlation_of(self, code: str) -> dict[str, Any] | None:
        """How correlation treats a fault (for the detail's vendor block)."""
        if not self.engine.enabled:
            return None
        out: dict[str, Any] = {}
        muted = self.engine.muted.get(code)
        if muted is not None:
            out["muted"] = True
            out["root_cause_code"] = muted.root_cause_code
            out["rule_id"] = muted.rule_id
        for cl in self.engine.clusters:
            if code in cl.codes:
                out["cluster_id"] = cl.cluster_id
        return out or None

    # entities -------------------------------------------------------------------------------
    def _node_fqns(self) -> list[str]:
        """Node names of the current graph (called from the executor thread too)."""
        return [n.fqn for n in self.state.cache.graph.nodes]

    def _entity_of(self, fault: FaultRecord) -> tuple[str, str] | None:
        """The app owning the fault's first source, resolved now (fixed in the event)."""
        if not fault.sources:
            return None
        entities = self.state.cache.entities
        gen, index = self._entity_index
        if gen != entities.generation or not index:
            index = {a.node_fqn: a.id for a in entities.apps.values() if a.node_fqn}
            self._entity_index = (entities.generation, index)
        source = fault.sources[0]
        app_id = index.get(source)
        if app_id is None:
            owners = [fqn for fqn in index if owns(fqn, source)]
            if not owners:
                return None
            app_id = index[max(owners, key=len)]
        return "app", app_id

    # freeze frames --------------------------------------------------------------------------
    def _capture(self, code: str, origin: str | None = None) -> None:
        old = self._captures.pop(code, None)
        if old is not None:
            old.cancel()
        task = asyncio.ensure_future(self._capture_frames(code, origin))
        self._captures[code] = task

        def done(t: asyncio.Task[Any]) -> None:
            if self._captures.get(code) is t:
                del self._captures[code]
            if not t.cancelled() and t.exception() is not None:
                log.warning("freeze frame capture of %s failed", code, exc_info=t.exception())

        task.add_done_callback(done)

    async def _capture_frames(self, code: str, origin: str | None) -> None:
        fault = self.faults.get(code)
        if fault is None or self.store is None:
            return
        # Right after a start (or a node's start) the graph may not know the node or its
        # topics yet: wait for them a little.
        deadline = time.monotonic() + CAPTURE_GRAPH_WAIT_S
        while True:
            graph = self.state.cache.graph
            node = graph.node(fault.sources[0]) if fault.sources else None
            own = [topic for topic, _ in node.publishers] if node is not None else []
            topics, rule = select_topics(code, self.snap_cfg, own)
            if rule == "none":
                return
            known = bool(topics) and all(t in graph.topics for t in topics)
            if known or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        if not topics:
            return
        results = await asyncio.gather(*(self._frame(graph, t, origin) for t in topics),
                                       return_exceptions=True)
        frames = [r for r in results if isinstance(r, dict)]
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                log.debug("freeze frame of %s: %r", code, r)
        fault = self.faults.get(code)
        if fault is None or (fault.status == CLEARED and not self.retain_on_clear):
            return
        if frames:
            self.store.put_snapshots(code, frames)

    async def _frame(self, graph: Any, topic: str, origin: str | None) -> dict[str, Any] | None:
        info = graph.topics.get(topic)
        if info is None or not info.type:
            return None
        sample, _entry = await self.state.pool.latest(topic, info.type, self.snapshot_timeout_s)
        if sample is None:
            return None
        if len(sample.data) > OFFLOOP_BYTES:
            raw = await asyncio.get_running_loop().run_in_executor(
                None, sample_to_json, info.type, sample.data)
        else:
            raw = sample_to_json(info.type, sample.data)
        return stored_frame(topic, info.type, orjson.loads(raw), time.time_ns(), origin)

    # background -----------------------------------------------------------------------------
    async def _action_topics_loop(self) -> None:
        assert self.bridges is not None
        seen_gen = -1
        while True:
            cache = self.state.cache
            if cache.generation != seen_gen:
                seen_gen = cache.generation
                topics = [t for t in cache.graph.topics if t.endswith(ACTION_STATUS_SUFFIX)]
                new = [t for t in topics if t not in self.bridges.action_subs]
                if new:
                    try:
                        await self.state.bridge.run(self.bridges.refresh_actions, new,
                                                    what="subscribing to action status")
                    except Exception:
                        log.warning("action status subscription failed", exc_info=True)
            await asyncio.sleep(ACTION_REFRESH_S)

    async def _auto_confirm_loop(self) -> None:
        period = min(1.0, max(0.05, self.cfg.auto_confirm_after_sec / 4))
        while True:
            await asyncio.sleep(period)
            now = time.time_ns()
            batch = _Batch()
            for f in self.faults.values():
                if f.status != PREFAILED:
                    continue
                change = manager.auto_confirm(f, now, self.cfg)
                if change is not None:
                    batch.changed[f.code] = f
                    self._note_change(f, change, now, batch)
            if batch.changed:
                try:
                    self._commit(batch, [], now)
                except Exception:
                    log.exception("fault database write failed (auto-confirm)")
                    continue
                self._publish(batch, now)

    async def _dedup_prune_loop(self) -> None:
        retention_ns = int(self.state.settings["faults.dedup_retention_sec"] * 1e9)
        while True:
            await asyncio.sleep(DEDUP_PRUNE_INTERVAL_S)
            assert self.store is not None
            cutoff = time.time_ns() - retention_ns
            for reporter, seq in self.store.dedup_keys_before(cutoff):
                seen = self.dedup.get(reporter)
                if seen is not None:
                    seen.discard(seq)
                    if not seen:
                        del self.dedup[reporter]
            self.store.prune_dedup(cutoff)


class _Batch:
    """What one flush or clear changed."""

    __slots__ = ("changed", "events", "captures", "cleared", "visited", "correlation_dirty")

    def __init__(self) -> None:
        self.changed: dict[str, FaultRecord] = {}
        self.events: list[tuple[str, str, tuple[str, ...]]] = []
        self.captures: list[str] = []
        self.cleared: list[str] = []
        self.visited: set[str] = set()
        self.correlation_dirty = False
