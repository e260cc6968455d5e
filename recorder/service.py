"""The rosbag black box: ring buffer, fault windows, writer thread and recording index.

Everything here runs on the event loop except the subscription callbacks (executor
thread, one locked push each) and the writer thread. A confirming fault takes the
pre-fault messages at once (references, no copy); when its window ends the post-fault
messages are added and the recording goes to the writer thread. Nothing is served until
it is complete on disk.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from gateway.events import FAULTS, Event, EventBus
from gateway.faults.bus_events import FaultChange
from gateway.process.storage import PROBE_INTERVAL_S, StorageWriteError
from gateway.process.waits import wait_event

from .buffer import RINGBUF_IMPL, RingBuffer
from .config import RecorderConfig
from .flusher import STORE, BagWriterThread, WriteJob
from .index import RecorderLock, Recording, RecordingIndex, per_fault_excess, quota_evictions
from .selection import NodeTopics
from .taps import Taps
from .windows import Window, Windows, new_recording_id
from .writer import MIMETYPE, BagMessage

log = logging.getLogger(__name__)

TRACK_INTERVAL_S = 1.0
# Wait this long past a window's end for messages still in flight.
CLOSE_GRACE_NS = 250_000_000
CONFIRMED, PREFAILED = "CONFIRMED", "PREFAILED"
CLEARED_STATES = frozenset({"CLEARED", "HEALED"})

GraphSource = Callable[[], tuple[int, NodeTopics]]  # (generation, node fqn -> publishers)


class Recorder:
    """Owns the recorder's state; a fault hook and bulk-data queries are its interface."""

    def __init__(self, cfg: RecorderConfig, graph: GraphSource, bridge: Any = None,
                 now: Callable[[], int] = time.time_ns) -> None:
        self.cfg = cfg
        self.graph = graph
        self.bridge = bridge
        self.now = now
        self.index = RecordingIndex(cfg.root)
        self.windows = Windows(cfg.duration_ns, cfg.after_ns, functools.partial(
            new_recording_id, prefix=cfg.id_prefix))
        self.taps = Taps(RingBuffer(cfg.duration_ns, cfg.max_buffer_bytes))
        self.writer = BagWriterThread(cfg.root, cfg.write_queue, self._written_threadsafe)
        self.pending: dict[str, Recording] = {}  # closed windows being written
        self.armed: set[str] = set()  # lazy start: nodes with a pending or confirmed fault
        self.running = False
        self._lock = RecorderLock(cfg.root)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._track: asyncio.Task[None] | None = None
        self._waiting: asyncio.Future[None] | None = None  # start once the disk can be written
        self._wake = asyncio.Event()
        self._unlisten: Callable[[], None] | None = None  # off the bus (listen)
        self.stats = {"windows_opened": 0, "faults_attached": 0, "recordings_written": 0,
                      "recordings_dropped": 0, "write_errors": 0, "evicted_quota": 0,
                      "removed_cleanup": 0, "truncated_messages": 0}

    # lifecycle ------------------------------------------------------------------------------
    async def start(self) -> bool:
        """Lock the storage directory, recover the index, start the writer and tracking."""
        self._loop = asyncio.get_running_loop()
        try:
            owned = await asyncio.to_thread(self._acquire)
        except StorageWriteError:  # a full or read-only disk: /health names it; retried
            self._waiting = asyncio.ensure_future(self._start_when_writable())
            return True
        if not owned:
            log.error("recorder: %s is in use by another gateway; rosbag recording is off",
                      self.cfg.root)
            return False
        await self._begin()
        return True

    def _acquire(self) -> bool:
        """Lock the storage directory (created if need be); StorageWriteError if it cannot."""
        with self.writer.storage.writing(STORE, self.cfg.root):
            return self._lock.acquire()

    async def _start_when_writable(self, interval_s: float = PROBE_INTERVAL_S) -> None:
        """Start once the storage directory can be written (the disk was full at start)."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                owned = await asyncio.to_thread(self._acquire)
            except StorageWriteError:
                continue
            if not owned:
                log.error("recorder: %s is in use by another gateway; rosbag recording is off",
                          self.cfg.root)
                return
            await self._begin()
            log.warning("recorder: %s can be written again; recording resumed", self.cfg.root)
            return

    async def _begin(self) -> None:
        report = await asyncio.to_thread(self.index.load)
        if report.recovered or report.discarded_partial or report.dropped:
            log.warning("recorder: recovered %d recordings, discarded %d unfinished, dropped %d "
                        "missing", len(report.recovered), len(report.discarded_partial),
                        len(report.dropped))
        self.writer.start()
        self.writer.save_index(self.index.dumps())
        self.running = True
        if self.bridge is not None:
            self._track = asyncio.ensure_future(self._track_loop())
        log.info("recorder: %d recordings in %s; ring buffer %s (%s), %s",
                 len(self.index.recordings), self.cfg.root,
                 f"{self.cfg.duration_ns / 1e9:g} s", RINGBUF_IMPL,
                 "lazy start" if self.cfg.lazy_start else "recording")

    async def stop(self) -> None:
        """Write what the open windows hold, unsubscribe, drain the writer, save the index."""
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        if self._waiting is not None:
            self._waiting.cancel()
            await asyncio.gather(self._waiting, return_exceptions=True)
        if not self.running:
            return
        self.running = False
        if self._timer is not None:
            self._timer.cancel()
        if self._track is not None:
            self._track.cancel()
            await asyncio.gather(self._track, return_exceptions=True)
        for w in self.windows.close_all():
            self._flush(w)
        if self.bridge is not None:
            try:
                await self.bridge.run(self.taps.close, self.bridge.node, timeout=5.0)
            except Exception:
                log.debug("recorder: unsubscribe at stop", exc_info=True)
        if await asyncio.to_thread(self.writer.stop, 60.0):
            for _ in range(3):
                await asyncio.sleep(0)  # completion callbacks queued by the last writes
            self.writer.save_index(self.index.dumps())
            await asyncio.to_thread(self.writer.run_pending)
        else:
            log.error("recorder: the writer thread did not finish within 60 s")
        self._lock.release()

    # the fault hook -------------------------------------------------------------------------
    def listen(self, bus: EventBus) -> None:
        """Hear every fault change on the gateway's event bus until stop()."""
        self._unlisten = bus.subscribe([FAULTS], self._on_fault_event)

    def _on_fault_event(self, event: Event[object]) -> None:
        change = event.payload
        if isinstance(change, FaultChange):  # a plugin's fault event carries a JSON body only
            self.on_fault(change.fault, change.confirmed_now)

    def on_fault(self, fault: Any, confirmed: bool) -> None:
        """Called for every fault change (event loop): confirmations open or join windows."""
        if not self.running:
            return
        status = getattr(fault, "status", "")
        sources = list(getattr(fault, "sources", ()))
        if self.cfg.lazy_start and status in (PREFAILED, CONFIRMED):
            if not set(sources) <= self.armed:
                self.armed.update(sources)
                self._wake.set()
        if confirmed:
            self.confirm(fault.code, sources)
        elif status in CLEARED_STATES and self.cfg.auto_cleanup:
            self.release(fault.code)

    def confirm(self, code: str, sources: Sequence[str]) -> Window:
        """A fault confirmed now: join the open window or open one with the pre-fault data."""
        now = self.now()
        window, new = self.windows.on_confirm(code, sources, now)
        _gen, nodes = self.graph()
        chosen = self.cfg.choice.recorded(sources, nodes)
        if chosen is None:
            window.all_topics = True
        else:
            window.topics |= chosen
        if new:
            self.stats["windows_opened"] += 1
            window.pre, window.pre_seq = self.taps.snapshot(since_ns=window.start_ns)
            self._schedule()
        else:
            self.stats["faults_attached"] += 1
        return window

    def release(self, code: str) -> None:
        """A fault cleared: it lets go of its recordings; those left without a fault go."""
        for w in self.windows.detach(code):
            w.pre = []
        for rec in self.pending.values():
            if code in rec.fault_codes:
                rec.fault_codes.remove(code)
                rec.sources.pop(code, None)
        held = self.index.for_code(code)
        if not held:
            return
        doomed = [rec.id for rec in held if self._detach(rec, code)]
        self.stats["removed_cleanup"] += len(doomed)
        self._commit(doomed)

    # windows --------------------------------------------------------------------------------
    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        end = self.windows.next_end()
        if end is None or self._loop is None:
            return
        delay = max(0.0, (end + CLOSE_GRACE_NS - self.now()) / 1e9)
        self._timer = self._loop.call_later(delay, self._close_due)

    def _close_due(self) -> None:
        self._timer = None
        for w in self.windows.due(self.now() - CLOSE_GRACE_NS):
            self._flush(w)
        self._schedule()

    def _flush(self, w: Window) -> None:
        """Collect a closed window's messages and hand them to the writer thread."""
        w.end_ns = min(w.end_ns, self.now())  # shorter when the gateway stops early
        post, _last = self.taps.snapshot(after_seq=w.pre_seq, until_ns=w.end_ns)
        metas = list(self.taps.metas)
        everything = w.all_topics
        messages: list[BagMessage] = [
            (e[1], e[2], e[3], e[4]) for e in (*w.pre, *post)
            if w.start_ns <= e[2] <= w.end_ns and (everything or metas[e[1]].name in w.topics)]
        w.pre = []
        if not w.codes:
            return
        messages.sort(key=lambda m: m[1])
        messages, dropped = cap_bytes(messages, self.cfg.max_bag_bytes)
        self.stats["truncated_messages"] += dropped
        rec = Recording(w.recording_id, self.cfg.format, "", w.trigger_ns, w.start_ns,
                        w.end_ns, fault_codes=list(w.codes),
                        sources={c: list(s) for c, s in w.sources.items()})
        job = WriteJob(rec, metas, messages, self.cfg.compression,
                       {"fault_codes": ",".join(w.codes), "recording_id": w.recording_id,
                        "trigger_time_ns": str(w.trigger_ns)})
        if self.writer.submit(job):
            self.pending[rec.id] = rec
        else:
            self.stats["recordings_dropped"] += 1
            log.error("recorder: writer queue full (%d); recording %s for %s dropped",
                      self.cfg.write_queue, rec.id, ", ".join(rec.fault_codes))

    def _written_threadsafe(self, rec: Recording | None, error: str | None,
                            job: WriteJob) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._written, rec, error, job)

    def _written(self, rec: Recording | None, error: str | None, job: WriteJob) -> None:
        """A write finished (event loop): index it, then apply the per-fault and total quotas."""
        self.pending.pop(job.recording.id, None)
        if rec is None:
            self.stats["write_errors"] += 1
            log.error("recorder: recording %s lost: %s", job.recording.id, error)
            return
        self.stats["recordings_written"] += 1
        self.index.add(rec)
        doomed = [] if rec.fault_codes else [rec.id]
        for code in rec.fault_codes:
            for old_id in per_fault_excess(self.index.recordings.values(), code,
                                           self.cfg.max_bags_per_fault):
                old = self.index.get(old_id)
                if old is not None and self._detach(old, code):
                    doomed.append(old_id)
        remaining = [r for r in self.index.recordings.values() if r.id not in doomed]
        over = quota_evictions(remaining, self.cfg.max_total_bytes, keep={rec.id})
        self.stats["evicted_quota"] += len(over)
        self._commit(doomed + over)
        log.info("recorder: %s written (%d messages, %d bytes) for %s", rec.id,
                 rec.message_count, rec.size, ", ".join(rec.fault_codes))

    @staticmethod
    def _detach(rec: Recording, code: str) -> bool:
        """Take a fault off a recording; True when no fault is left on it."""
        if code in rec.fault_codes:
            rec.fault_codes.remove(code)
            rec.sources.pop(code, None)
        return not rec.fault_codes

    def _commit(self, doomed: Iterable[str]) -> None:
        """Unindex and delete recordings, then persist the index (writer thread)."""
        ids = [i for i in doomed if self.index.remove(i) is not None]
        if ids:
            self.writer.delete(ids)
        self.writer.save_index(self.index.dumps())

    # subscriptions --------------------------------------------------------------------------
    async def _track_loop(self) -> None:
        last: Any = None
        while True:
            try:
                gen, nodes = self.graph()
                armed = frozenset(self.armed) if self.cfg.lazy_start else None
                if (gen, armed) != last:
                    wanted = self.cfg.choice.buffered(nodes, armed)
                    added, removed = await self.bridge.run(
                        self.taps.update, self.bridge.node, wanted, timeout=10.0,
                        what="recorder subscriptions")
                    last = (gen, armed)
                    if added or removed:
                        log.info("recorder: +%d -%d topics (%d recorded)", len(added),
                                 len(removed), len(self.taps.subs))
                self.taps.trim(self.now())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("recorder: subscription update failed", exc_info=True)
            self._wake.clear()
            await wait_event(self._wake, TRACK_INTERVAL_S)

    # queries (bulk-data) --------------------------------------------------------------------
    def resolve(self, rec_id_or_code: str) -> Recording | None:
        """A recording by id; else the newest recording of a fault with that code."""
        rec = self.index.get(rec_id_or_code)
        if rec is not None:
            return rec
        recs = self.index.for_code(rec_id_or_code)
        return recs[0] if recs else None

    def path(self, rec: Recording) -> Path:
        """The storage file of a recording."""
        return self.index.file_of(rec)

    @staticmethod
    def mimetype(rec: Recording) -> str:
        """Media type of a recording's file."""
        return MIMETYPE.get(rec.format, "application/octet-stream")

    def health(self) -> dict[str, Any]:
        """The x-vendor-recorder block of /health."""
        return {"enabled": self.running, "ringbuf": RINGBUF_IMPL,
                "lazy_start": self.cfg.lazy_start, "format": self.cfg.format,
                "buffer": self.taps.stats(), "open_windows": len(self.windows.open),
                "writing": len(self.pending), "write_queue": self.writer.queued_writes,
                "recordings": len(self.index.recordings),
                "storage_bytes": self.index.total_bytes(), **self.stats}


def cap_bytes(messages: list[BagMessage], max_bytes: int) -> tuple[list[BagMessage], int]:
    """Leave out the oldest messages until the payload fits max_bytes; returns (kept, left out)."""
    total = sum(len(m[3]) for m in messages)
    first = 0
    while total > max_bytes and first < len(messages):
        total -= len(messages[first][3])
        first += 1
    return messages[first:], first
