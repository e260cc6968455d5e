"""The writer thread: bag writes, deletions and index saves, off the event loop, in order.

Write jobs wait in a bounded queue (a job that does not fit is refused, never waited for);
deletions and index saves are small and always accepted. A bag is written into
`<id>.partial/` and renamed to `<id>/` only when complete.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gateway.process.storage import StorageHealth, log_write_failure

from .index import INDEX_NAME, PARTIAL_SUFFIX, SIDECAR_NAME, Recording, fsync_dir, write_atomic
from .writer import BagMessage, TopicMeta, write_bag

log = logging.getLogger(__name__)


@dataclass
class WriteJob:
    """One recording to write."""

    recording: Recording  # size, message_count, file and topics are filled in by the write
    topics: Sequence[TopicMeta]
    messages: list[BagMessage]
    compression: str = "none"
    custom_data: Mapping[str, str] = field(default_factory=dict)


# What an op carries: "write" a WriteJob, "delete" the recording ids, "index" the index bytes.
_Payload = WriteJob | list[str] | bytes

# on_written(recording or None, error text or None, job)
Done = Callable[[Recording | None, str | None, WriteJob], None]


STORE = "recordings"  # the store's name in storage health


class BagWriterThread:
    """One daemon thread doing all of the recorder's disk writes."""

    def __init__(self, root: Path, max_jobs: int, on_written: Done) -> None:
        self.root = root
        self.max_jobs = max(1, max_jobs)
        self.on_written = on_written
        self._ops: deque[tuple[str, _Payload]] = deque()
        self._cond = threading.Condition()
        self._pending_writes = 0
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="recorder-writer", daemon=True)
        self.written = 0
        self.refused = 0
        self.failed = 0
        self.bytes_written = 0
        self.write_seconds = 0.0
        self.storage = StorageHealth()  # the gateway's, set by whoever starts the recorder

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    @property
    def queued_writes(self) -> int:
        """Write jobs waiting or running."""
        return self._pending_writes

    def submit(self, job: WriteJob) -> bool:
        """Queue a bag write; False (and nothing queued) when the queue is full."""
        with self._cond:
            if self._stopping or self._pending_writes >= self.max_jobs:
                self.refused += 1
                return False
            self._pending_writes += 1
            self._ops.append(("write", job))
            self._cond.notify()
        return True

    def delete(self, rec_ids: Sequence[str]) -> None:
        """Queue the removal of bag directories."""
        if rec_ids:
            self._put("delete", list(rec_ids))

    def save_index(self, data: bytes) -> None:
        """Queue an index.json replacement (only the newest queued one is written)."""
        self._put("index", data)

    def _put(self, kind: str, payload: _Payload) -> None:
        with self._cond:
            self._ops.append((kind, payload))
            self._cond.notify()

    def stop(self, timeout: float = 30.0) -> bool:
        """Finish what is queued, then end the thread; False when it did not end in time."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def run_pending(self) -> None:
        """Do what was queued after the thread ended (call only once stop() returned True)."""
        assert not self._thread.is_alive()
        while self._ops:
            self._do(*self._ops.popleft())

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._ops and not self._stopping:
                    self._cond.wait()
                if not self._ops:
                    return
                kind, payload = self._ops.popleft()
                if kind == "index" and any(k == "index" for k, _ in self._ops):
                    continue  # a newer index is queued
            self._do(kind, payload)

    def _do(self, kind: str, payload: _Payload) -> None:
        try:
            if isinstance(payload, WriteJob):  # "write"
                self._write(payload)
            elif isinstance(payload, list):  # "delete"
                for rec_id in payload:
                    shutil.rmtree(self.root / rec_id, ignore_errors=True)
            else:  # "index"
                with self.storage.writing(STORE, self.root):
                    write_atomic(self.root / INDEX_NAME, payload)
        except Exception as exc:
            log_write_failure(log, "recorder: %s failed", kind, exc)

    def _write(self, job: WriteJob) -> None:
        rec = job.recording
        partial = self.root / f"{rec.id}{PARTIAL_SUFFIX}"
        final = self.root / rec.id
        start = time.perf_counter()
        moved = False
        try:
            with self.storage.writing(STORE, self.root):  # a full disk: one log line, /health
                shutil.rmtree(partial, ignore_errors=True)
                partial.mkdir(parents=True)
                info = write_bag(partial, rec.id, rec.format, job.topics, job.messages,
                                 compression=job.compression, custom_data=job.custom_data)
                rec.file = info.file_name
                rec.size = info.size
                rec.message_count = info.message_count
                rec.topics = sorted(n for n, c in info.topic_counts.items() if c)
                write_atomic(partial / SIDECAR_NAME,
                             json.dumps(rec.to_dict(), indent=1).encode())
                partial.rename(final)
                moved = True
                fsync_dir(self.root)
        except Exception as exc:
            shutil.rmtree(partial, ignore_errors=True)
            if moved:  # renamed but not durable: not listed, not left behind
                shutil.rmtree(final, ignore_errors=True)
            self.failed += 1
            log_write_failure(log, "recorder: writing %s failed", rec.id, exc)
            self._done(None, f"{type(exc).__name__}: {exc}", job)
            return
        finally:
            job.messages = []  # release the payload references now
            with self._cond:
                self._pending_writes -= 1
        self.written += 1
        self.bytes_written += rec.size
        self.write_seconds += time.perf_counter() - start
        self._done(rec, None, job)

    def _done(self, rec: Recording | None, error: str | None, job: WriteJob) -> None:
        try:
            self.on_written(rec, error, job)
        except Exception:
            log.exception("recorder: completion callback failed")
