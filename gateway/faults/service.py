"""The fault manager inside the gateway: ingestion, debounce, correlation, commits, events.

Every change is applied in memory on the event loop, then committed by the writer thread;
reporters are acknowledged and events published only after their commit (at-most-once acks).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

import orjson
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from ..events import FAULTS
from ..http.settings import SseSettings
from ..process.settings import ProcessSettings
from . import manager, views
from .batch import FaultBatch
from .bodies import BodyCache
from .bridges import RosBridges
from .bus_events import batch_events
from .capture import FrameCapture
from .correlation import CorrelationConfig, CorrelationConfigError, CorrelationEngine, load_config
from .hooks import FaultHooks
from .manager import Change, DebounceConfig
from .model import CLEARED, CONFIRMED, PREFAILED, FaultRecord, Report
from .reporter import ACK_TOPIC, QUEUE_DEPTH, REPORT_TOPIC, decode_reports, encode_ack
from .scope import in_scope
from .settings import CorrelationSettings, FaultSettings, SnapshotSettings
from .snapshots import SnapshotConfig, SnapshotConfigError
from .snapshots import load_config as load_snapshot_config
from .store import FaultStore, StoreBatch
from .stream import FaultStream, SseSlots
from .upkeep import EntityIndex, action_topics_loop, dedup_prune_loop
from .wire import FAULTS as FAULTS_WIRE
from .writer import StoreWriter, log_write_failure, write_timed

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)

FLUSH_MAX_ITEMS = 500  # reports applied per flush at most
FLUSH_BUDGET_S = 0.002  # and about this much loop time per flush (the rest follows the commit)

# (reporter id or None for bridge reports, sequence number, report)
Item = tuple[str | None, int, Report]


def _settings_debounce(f: FaultSettings) -> DebounceConfig:
    return DebounceConfig(
        confirmation_threshold=f.confirmation_threshold,
        healing_enabled=f.healing_enabled,
        healing_threshold=f.healing_threshold,
        critical_immediate_confirm=f.critical_immediate_confirm,
        auto_confirm_after_sec=f.auto_confirm_after_sec,
    ).validated()


class FaultService:
    """Owns every fault; all methods run on the event loop unless marked otherwise."""

    def __init__(self, state: GatewayState, slots: SseSlots) -> None:
        s = state.settings
        self.state, self.slots = state, slots  # the stream slots, shared with push delivery
        self.hooks = FaultHooks()  # clear filters and guards, snapshot providers (locks, ...)
        self.entity_index = EntityIndex()
        self.xv: str = state.xv
        self.wire = state.serializer(FAULTS_WIRE)  # the profile's fault shapes
        self.cfg = _settings_debounce(s.typed(FaultSettings.from_settings))
        snap = s.typed(SnapshotSettings.from_settings)
        self.snapshots_enabled: bool = snap.enabled
        self.retain_on_clear: bool = snap.retain_on_clear
        self.snapshot_timeout_s: float = snap.timeout_sec
        try:
            self.snap_cfg = load_snapshot_config(snap.config_file, snap.default_topics,
                                                 snap.entity_default)
        except SnapshotConfigError as exc:
            log.error("setting 'snapshots.config_file': %s; capturing default topics only", exc)
            self.snap_cfg = SnapshotConfig(entity_default=snap.entity_default)
        corr = CorrelationConfig()
        correlation_file = s.typed(CorrelationSettings.from_settings).config_file
        if correlation_file:
            try:
                corr = load_config(correlation_file)
            except CorrelationConfigError as exc:
                log.error("setting 'correlation.config_file': %s; correlation is off", exc)
        self.engine = CorrelationEngine(corr)
        self.writer = StoreWriter()
        self.capture = FrameCapture(state, self.writer, self.snap_cfg, self.snapshot_timeout_s,
                                    self.retain_on_clear, self.faults_get)
        self.generation = 0  # bumped on every in-memory change (list bodies are cached by it)
        self.bodies = BodyCache()
        self.faults: dict[str, FaultRecord] = {}
        self.dedup: dict[str, set[int]] = {}
        self.stream: FaultStream | None = None
        self.bridges: RosBridges | None = None
        self._inbox: list[Item] = []
        self._rx: list[str] = []  # report texts, filled by the executor thread
        self._rx_lock = threading.Lock()
        self._rx_scheduled = self._flush_scheduled = False
        self._committing = False  # a flush's commit is in flight: the next flush waits for it
        self._pending: set[asyncio.Future[Any]] = set()  # commits not yet done
        self._unpublished = 0  # events committed or in flight but not yet published
        self._tasks: set[asyncio.Task[Any]] = set()
        self._report_sub: Any = None
        self._ack_pub: Any = None
        self._stopped = False
        self.stats = {"reports_received": 0, "reports_applied": 0, "reports_duplicate": 0,
                      "bad_messages": 0, "flushes": 0, "events_published": 0,
                      "commits": 0, "commit_us_total": 0, "commit_us_max": 0}

    # lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the database, subscribe, start the background tasks."""
        s = self.state.settings
        fs = s.typed(FaultSettings.from_settings)
        store = await self.writer.open(s.typed(ProcessSettings.from_settings).state_dir,
                                       self.state.storage)
        self.faults, self.dedup, corr = await self.writer.call(FaultStore.load_state)
        self.engine.load_state(corr)
        event_seq = await self.writer.call(FaultStore.get_meta, "event_seq", 0)
        slots = self.slots
        # Event ids survive restarts: ids are handed out only below the stored reservation
        # (relayed events reserve a block through the writer thread).
        self.stream = FaultStream(slots, s.typed(SseSettings.from_settings).keepalive_sec,
                                  int(event_seq), persist=self._persist_event_seq)
        bridge = self.state.bridge
        await bridge.run(self._create_ros, what="creating the fault report subscription")
        loop = bridge.loop
        assert loop is not None  # the bridge started before the services

        def submit(reports: list[Report]) -> None:  # a ROS thread: hand over to the loop
            loop.call_soon_threadsafe(self.submit, reports)

        self.bridges = RosBridges(
            bridge.node, submit,
            self._node_fqns,
            rosout=fs.rosout_bridge_enabled,
            diagnostics=fs.diagnostics_bridge_enabled,
            actions=fs.action_bridge_enabled,
            diagnostics_topic=fs.diagnostics_bridge_topic,
            code_map={k: str(v) for k, v in fs.diagnostics_bridge_code_map.items()},
            rosout_cooldown_s=fs.rosout_bridge_cooldown_sec,
            rosout_code_tags=fs.rosout_bridge_code_tags,
            report_canceled=fs.action_bridge_report_canceled,
            log_node=bridge.call_node)
        await bridge.run(self.bridges.start, what="creating the fault bridge subscriptions")
        self._spawn(action_topics_loop(self.state, self.bridges))
        self._spawn(dedup_prune_loop(self))
        if self.cfg.auto_confirm_after_sec > 0:
            self._spawn(self._auto_confirm_loop())
        if self.snapshots_enabled:
            have = await self.writer.call(FaultStore.codes_with_snapshots)
            for f in self.faults.values():
                if f.status == CONFIRMED and f.code not in have:
                    self.capture.start(f.code, origin="startup")
        log.info("fault manager: %d faults loaded from %s", len(self.faults), store.path)

    @property
    def store(self) -> FaultStore | None:
        """The open store (used only on the writer thread)."""
        return self.writer.store

    def faults_get(self, code: str) -> FaultRecord | None:
        """One fault by code (the capture's view of the current state)."""
        return self.faults.get(code)

    def _create_ros(self) -> None:
        from std_msgs.msg import String  # noqa: PLC0415 - ROS types load on first use

        # The report topic is the storm path: on the call node (rclpy's EventsExecutor with
        # ros.executor=events) a message costs a fraction of a wait-set rebuild, so a burst of
        # reports takes little CPU and GIL from the event loop.
        node = self.state.bridge.call_node
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=QUEUE_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        self._String = String
        self._ack_pub = node.create_publisher(String, ACK_TOPIC, qos)
        self._report_sub = node.create_subscription(
            String, REPORT_TOPIC, self._on_report_msg, qos,
            callback_group=MutuallyExclusiveCallbackGroup())

    def _destroy_ros(self) -> None:
        node = self.state.bridge.call_node
        for fn, obj in ((node.destroy_subscription, self._report_sub),
                        (node.destroy_publisher, self._ack_pub)):
            if obj is not None:
                try:
                    fn(obj)
                except Exception:
                    log.debug("fault service teardown", exc_info=True)
        if self.bridges is not None:
            self.bridges.stop()

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """The /health blocks: the stream slots and the fault manager."""
        return {"x-vendor-sse": self.slots.health, "x-vendor-fault-manager": self.health}

    async def shutdown(self) -> None:
        """End open fault streams so the server stops without waiting."""
        if self.stream is not None:
            self.stream.end_all()

    async def stop(self) -> None:
        """Flush, cancel the tasks, unsubscribe and close the database."""
        if self.store is not None:
            await self._drain()
        self._stopped = True
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.capture.stop()
        if self.stream is not None:
            await self.stream.close()
        try:
            await self.state.bridge.run(self._destroy_ros, timeout=5.0)
        except Exception:
            log.debug("fault service teardown", exc_info=True)
        await self.writer.close()
        log.info("fault manager stopped")

    async def _drain(self) -> None:
        """Commit and publish everything received so far."""
        for _ in range(1000):  # bounded: a store that keeps failing must not hang the stop
            await asyncio.gather(*list(self._pending), return_exceptions=True)
            if not self._inbox:
                break
            if self._committing:  # a reload after a failed commit
                await asyncio.sleep(0.01)
                continue
            self._flush()
        await asyncio.gather(*list(self._pending), return_exceptions=True)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def health(self) -> dict[str, Any]:
        """The x-vendor-fault-manager block of /health."""
        active = sum(1 for f in self.faults.values() if f.status != CLEARED)
        return {"persistent": bool(self.store and self.store.persistent),
                "faults": len(self.faults), "active_faults": active, **self.stats,
                "writer_busy_us_max": self.writer.busy_us_max,
                "stream_backlog": self.stream.backlog() if self.stream is not None else 0}

    # ingestion ------------------------------------------------------------------------------
    def _on_report_msg(self, msg: Any) -> None:
        """Report topic callback (executor thread): hand the text to the loop, undecoded.

        The executor thread holds the GIL as briefly as it can: while the loop writes to
        many sockets (a fault fan-out), each send lets a waiting thread take the GIL, and the
        loop then waits for as long as that thread keeps it (decoding here cost the loop a
        GIL round trip of about 0.2 ms per send during a storm)."""
        loop = self.state.bridge.loop
        if loop is None:
            return
        # Coalesce: one loop wake-up for however many messages arrive before it runs.
        with self._rx_lock:
            self._rx.append(msg.data)
            if self._rx_scheduled:
                return
            self._rx_scheduled = True
        loop.call_soon_threadsafe(self._drain_rx)

    def _drain_rx(self) -> None:
        with self._rx_lock:
            texts, self._rx = self._rx, []
            self._rx_scheduled = False
        items: list[Item] = []
        for text in texts:
            decoded = decode_reports(text)
            if decoded is None:
                self.stats["bad_messages"] += 1
                continue
            reporter, _source, reports = decoded
            items.extend((reporter, r["seq"], Report(r["code"], r["event"], r["severity"],
                                                     r["description"], r["source"]))
                         for r in reports)
        if items:
            self._receive(items)

    def submit(self, reports: Iterable[Report]) -> None:
        """Reports of a drop-in source (no acknowledgement, no dedup)."""
        self._receive([(None, 0, r) for r in reports])

    def _receive(self, items: list[Item]) -> None:
        if self._stopped:
            return
        self.stats["reports_received"] += len(items)
        self._inbox.extend(items)
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Apply everything received since the last flush, commit it in one transaction."""
        self._flush_scheduled = False
        if self._committing or not self._inbox or self.store is None:
            return  # a flush in flight flushes again when its commit is done
        # A bounded batch keeps each flush's time on the loop short; the rest follows as soon
        # as this batch is committed.
        inbox = self._inbox
        until = time.perf_counter() + FLUSH_BUDGET_S
        now = time.time_ns()
        acks: dict[str, list[int]] = {}
        keys: list[tuple[str, int]] = []
        batch = FaultBatch()
        taken = 0
        for reporter, seq, report in inbox:
            if taken >= FLUSH_MAX_ITEMS or (taken and taken % 32 == 0
                                            and time.perf_counter() > until):
                break
            taken += 1
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
        del inbox[:taken]
        self._committing = True
        events = self._events(batch, now)
        fut = self._commit(batch, keys, now, len(events))

        def done(f: asyncio.Future[int]) -> None:
            self._committing = False
            if self._committed(f, "reports stay unacknowledged"):
                self.stats["flushes"] += 1
                self._send_acks(acks)
                self._publish(batch, events)
            if self._inbox:
                self._schedule_flush()

        fut.add_done_callback(done)

    def _committed(self, fut: asyncio.Future[int], what: str) -> bool:
        """Book a finished commit; on failure reload what the database holds and say so."""
        if fut.cancelled():
            return False
        exc = fut.exception()
        if exc is not None:
            # Back to what the database holds; reporters resend what was not acked.
            log_write_failure(log, "fault database write failed; %s", what, exc)
            self._spawn(self._reload()).set_name("faults-reload")
            return False
        us = fut.result()
        self.stats["commits"] += 1
        self.stats["commit_us_total"] += us
        self.stats["commit_us_max"] = max(self.stats["commit_us_max"], us)
        return True

    async def _reload(self) -> None:
        self._committing = True
        try:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
            self.faults, self.dedup, corr = await self.writer.call(FaultStore.load_state)
            self.engine.load_state(corr)
            self.generation += 1
        except Exception:
            log.exception("fault database unreadable; keeping the state in memory")
        finally:
            self._committing = False
            if self._inbox:
                self._schedule_flush()

    def _apply(self, report: Report, now: int, batch: FaultBatch) -> None:
        fault, change = manager.apply(self.faults.get(report.code), report, now, self.cfg)
        if fault is None or change is None:
            return
        self.faults[fault.code] = fault
        batch.changed[fault.code] = fault
        if change.onset and self.engine.enabled:
            self.engine.on_onset(fault.code, fault.severity, now)
            batch.correlation_dirty = True
        self._note_change(fault, change, now, batch)

    def _note_change(self, fault: FaultRecord, change: Change, now: int, batch: FaultBatch) -> None:
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

    def _cascade(self, code: str, now: int, batch: FaultBatch,
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

    def _commit(self, batch: FaultBatch, keys: list[tuple[str, int]], now: int,
                n_events: int) -> asyncio.Future[int]:
        """Queue the batch's rows (serialized here, on the loop) for the writer thread."""
        assert self.stream is not None
        self.generation += 1
        rows = StoreBatch(faults=[(r.code, r.to_json()) for r in batch.changed.values()],
                          dedup=keys, at_ns=now)
        if batch.correlation_dirty:
            rows.meta["correlation"] = orjson.dumps(self.engine.to_state())
        if batch.cleared and not self.retain_on_clear:
            rows.drop_snapshots = list(batch.cleared)
        if n_events:
            self._unpublished += n_events
            rows.meta["event_seq"] = orjson.dumps(self.stream.reserve(self._unpublished))
        fut = self.writer.call(write_timed, rows)
        self._pending.add(fut)
        fut.add_done_callback(self._pending.discard)
        return fut

    def _persist_event_seq(self, seq: int) -> None:
        self.writer.call_logged("the event id reservation", FaultStore.set_meta, "event_seq", seq)

    async def settled(self) -> None:
        """Wait for every commit queued so far; raises the first commit failure."""
        results = await asyncio.gather(*list(self._pending), return_exceptions=True)
        if failed := [r for r in results if isinstance(r, BaseException)]:  # once reloaded:
            await asyncio.gather(*[t for t in self._tasks if t.get_name() == "faults-reload"],
                                 return_exceptions=True)  # memory holds what the database does
            raise failed[0]

    def _send_acks(self, acks: dict[str, list[int]]) -> None:
        if self._ack_pub is None or self.writer.holding():  # acked once on disk (resent)
            return
        for reporter, seqs in acks.items():
            try:
                self._ack_pub.publish(self._String(data=encode_ack(reporter, seqs)))
            except Exception:
                log.debug("ack publish failed", exc_info=True)

    def _events(self, batch: FaultBatch, now: int) -> list[tuple[str, dict[str, Any]]]:
        """Event bodies as the faults are now (published after the commit)."""
        out = []
        for event_type, code, auto in batch.events:
            fault = self.faults[code]
            out.append((event_type, views.event(self.wire, event_type, fault, now,
                                                self.entity_index.entity_of(self.state.cache.entities, fault), auto)))
        return out

    def _publish(self, batch: FaultBatch, events: list[tuple[str, dict[str, Any]]]) -> None:
        assert self.stream is not None
        self._unpublished -= len(events)
        self.stream.publish_many(events)  # one wake-up per client for the whole batch
        self.stats["events_published"] += len(events)
        if self.snapshots_enabled:
            for code in batch.captures:
                self.capture.start(code)
        bus = self.state.events
        if bus.has_listeners(FAULTS):  # the recorder, fault triggers
            entities = self.state.cache.entities
            for event in batch_events(batch, self.faults,
                                      lambda f: self.entity_index.entity_of(entities, f)):
                bus.publish(event)

    # clearing -------------------------------------------------------------------------------
    def clear(self, codes: Iterable[str], scope: Collection[str] | None = None) -> list[str]:
        """Clear faults (DELETE); symptoms go with their root cause, only within scope if given.

        Returns every code that changed to CLEARED; `settled()` waits for the commit.
        """
        now = time.time_ns()
        batch = FaultBatch()
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
        self._commit_and_publish(batch, now, "the clear is lost")
        if not self.retain_on_clear:
            for code in batch.cleared:
                self.capture.cancel(code)
        return list(batch.cleared)

    def _commit_and_publish(self, batch: FaultBatch, now: int, what: str) -> None:
        events = self._events(batch, now)
        fut = self._commit(batch, [], now, len(events))

        def done(f: asyncio.Future[int]) -> None:
            if self._committed(f, what):
                self._publish(batch, events)

        fut.add_done_callback(done)

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

    async def frames(self, code: str) -> list[dict[str, Any]]:
        """Stored freeze frames of a fault (read on the writer thread)."""
        if self.store is None:
            return []
        return await self.writer.call(FaultStore.snapshots, code)

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

    # background -----------------------------------------------------------------------------
    async def _auto_confirm_loop(self) -> None:
        period = min(1.0, max(0.05, self.cfg.auto_confirm_after_sec / 4))
        while True:
            await asyncio.sleep(period)
            now = time.time_ns()
            batch = FaultBatch()
            for f in self.faults.values():
                if f.status != PREFAILED:
                    continue
                change = manager.auto_confirm(f, now, self.cfg)
                if change is not None:
                    batch.changed[f.code] = f
                    self._note_change(f, change, now, batch)
            if batch.changed:
                self._commit_and_publish(batch, now, "the auto-confirmation is lost")
