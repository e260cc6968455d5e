"""The fault store's writer thread: every SQLite call runs there, in submission order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..process.storage import StorageHealth
from ..process.storage import log_write_failure as log_write_failure  # for the service
from .store import FaultStore, StateDirLock, open_store

T = TypeVar("T")


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
        store, self.lock = await self._run(open_store, state_dir)
        if storage is not None:
            store.storage = storage
        self.store = store
        return store

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

    def _run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        return asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def close(self) -> None:
        """Wait for queued writes, close the store and release the state directory."""
        store, lock = self.store, self.lock
        if store is not None:
            await self._run(store.close)
        if lock is not None:
            lock.release()
        self._pool.shutdown(wait=True)
