"""The fault store's writer thread: every SQLite call runs there, in submission order."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..process.storage import StorageHealth
from ..process.storage import log_write_failure as log_write_failure  # for the service
from .store import STORE, FaultStore, StateDirLock, StoreBatch, open_store

log = logging.getLogger(__name__)
T = TypeVar("T")
PROBE_RETRY_TIMEOUT_S = 30.0  # a storage probe waits this long for the writer thread


class StoreWriter:
    """One thread owns the FaultStore; the event loop only waits on futures (never on a commit)."""

    def __init__(self) -> None:
        # One worker: a FIFO queue, so commits land in the order they were submitted.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faults-writer")
        self.store: FaultStore | None = None
        self.lock: StateDirLock | None = None
        self.busy_us_max = 0

    async def open(self, state_dir: str, storage: StorageHealth | None = None) -> FaultStore:
        """Open (or fall back to an in-memory) store on the writer thread; its write failures
        go to storage."""
        store, self.lock = await self._run(open_store, state_dir, storage)
        if storage is not None:
            store.storage = storage
            # A database that could not be opened at start is opened once a probe write
            # succeeds (process/storage.py), on this thread.
            storage.on_probe(STORE, lambda: self._pool.submit(store.probe_retry).result(
                PROBE_RETRY_TIMEOUT_S))
        self.store = store
        return store

    def holding(self) -> bool:
        """Faults are held in memory until the database file can be written (not durable)."""
        store = self.store
        return store is not None and store.waiting is not None

    def attach(self, store: FaultStore) -> None:
        """Use a store opened elsewhere (tests); it must allow use from the writer thread."""
        self.store = store

    def call(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run fn(store, *args) on the writer thread; the future resolves on the loop."""
        store = self.store
        assert store is not None

        def job() -> T:
            start = time.perf_counter_ns()
            try:
                return fn(store, *args)
            finally:
                us = (time.perf_counter_ns() - start) // 1000
                if us > self.busy_us_max:
                    self.busy_us_max = us

        return asyncio.get_running_loop().run_in_executor(self._pool, job)

    def call_logged(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """call() whose failure nobody awaits: logged (a full disk once, by storage health)."""
        def done(fut: asyncio.Future[Any]) -> None:
            exc = None if fut.cancelled() else fut.exception()
            if exc is not None:
                log_write_failure(log, "fault database: %s not stored", what, exc)

        self.call(fn, *args).add_done_callback(done)

    def _run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        return asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def close(self) -> None:
        """Wait for queued writes, close the store and release the state directory."""
        store = self.store
        locks = [self.lock]
        if store is not None:
            if store.waiting is not None:
                await self._run(store.attach, True)  # a last chance to store what memory holds
            await self._run(store.close)
            locks += [store.lock, store.waiting.lock if store.waiting is not None else None]
        for lock in {id(lk): lk for lk in locks if lk is not None}.values():
            lock.release()
        self._pool.shutdown(wait=True)


def write_timed(store: FaultStore, rows: StoreBatch) -> int:
    """Commit rows (writer thread); returns the time taken in microseconds."""
    start = time.perf_counter_ns()
    store.write_batch(rows)
    return (time.perf_counter_ns() - start) // 1000
