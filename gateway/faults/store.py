"""SQLite (WAL) persistence of faults, freeze frames, report dedup keys and engine state.

In WAL mode with synchronous=NORMAL a commit is a write() to the WAL file without fsync, so a
killed process loses nothing it committed (only a power loss could); still, a commit can take
milliseconds on a busy disk, so the gateway runs every store call on the writer thread
(writer.py). Checkpoints, which do fsync, run on a thread of their own.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..process.dirlock import DirLock
from ..process.statefiles import default_state_dir
from ..process.storage import StorageHealth, StorageWriteError
from .dbfile import MEMORY, DiskWait, connect, merge, seed
from .model import FaultRecord

log = logging.getLogger(__name__)

DB_NAME = "faults.db"
LOCK_NAME = "faults.lock"
STORE = "faults"  # the store's name in storage health
CHECKPOINT_INTERVAL_S = 10.0


class FaultStore:
    """One SQLite database; used from one thread at a time (the writer thread)."""

    def __init__(self, path: str | Path | None, storage: StorageHealth | None = None) -> None:
        self.path = str(path) if path else MEMORY
        self.directory = str(Path(self.path).parent) if path else MEMORY
        self.storage = storage or StorageHealth()  # the gateway's, once the writer opens it
        # The writer thread uses it; tests may open it elsewhere first. Raises sqlite3.Error.
        self.conn = connect(self.path)
        self.lock: StateDirLock | None = None  # the state directory's, held while open
        self.waiting: DiskWait | None = None  # in memory until the file can be written
        self._depth = 0
        self.commits = 0
        self._stop = threading.Event()
        self._checkpointer: threading.Thread | None = None
        if self.path != MEMORY:
            self._start_checkpointer()

    def _start_checkpointer(self) -> None:
        self._checkpointer = threading.Thread(target=self._checkpoint_loop,
                                              name="faults-checkpoint", daemon=True)
        self._checkpointer.start()

    @property
    def persistent(self) -> bool:
        """False for the in-memory fallback."""
        return self.path != MEMORY

    def attach(self, force: bool = False) -> bool:
        """While waiting for the database file (writer thread): open (create) it, merge what
        memory holds into it and use it from now on; failures are booked in storage health.
        Without force, at most once per RETRY_S. True once the file is in use."""
        wait = self.waiting
        if wait is None:
            return self.persistent
        if not force and not wait.due():
            return False
        wait.tried()
        path = wait.directory / DB_NAME
        try:
            if wait.lock is None:
                lock = StateDirLock(wait.directory)
                if not lock.acquire():
                    log.warning("setting 'state_dir': %s is in use by another gateway now; "
                                "faults stay in memory only", wait.directory)
                    self.waiting = None
                    self.storage.ok(STORE)
                    return False
                wait.lock = lock
            conn = connect(str(path))
            try:
                conn.execute("BEGIN")
                n = merge(self.conn, conn, wait.seeded)
                conn.execute("COMMIT")
            except BaseException:
                conn.close()
                raise
        except (OSError, sqlite3.Error) as exc:
            self.storage.failed(StorageWriteError(STORE, wait.directory, exc))
            return False
        old, self.conn = self.conn, conn
        old.close()
        self.path, self.directory, self.lock = str(path), str(wait.directory), wait.lock
        self.waiting = None
        self._start_checkpointer()
        self.storage.ok(STORE)
        log.warning("fault database %s opened after %d attempts: %d faults changed in memory "
                    "meanwhile are stored", path, wait.attempts, n)
        return True

    def probe_retry(self) -> None:
        """After a probe write succeeded (writer thread): open the file when waiting for it,
        otherwise the store counts as writable again (its next commit says)."""
        if self.waiting is not None:
            self.attach(force=True)
        else:
            self.storage.ok(STORE)

    def _checkpoint_loop(self) -> None:
        # PASSIVE never waits for the writer; a short busy timeout bounds the rest.
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=0.5)
        try:
            while not self._stop.wait(CHECKPOINT_INTERVAL_S):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    log.debug("WAL checkpoint", exc_info=True)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            log.debug("final WAL checkpoint", exc_info=True)
        finally:
            conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One commit for everything inside (nested uses join the outer one)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._depth = 1
        if self.waiting is not None:
            self.attach()  # the file, once it can be written; else this commit stays in memory
        try:
            with (self.storage.writing(STORE, self.directory) if self.waiting is None
                  else contextlib.nullcontext()):  # a full disk says so (507)
                self.conn.execute("BEGIN")
                try:
                    yield
                    self.conn.execute("COMMIT")
                except BaseException:
                    if self.conn.in_transaction:  # SQLite may have rolled back already
                        self.conn.execute("ROLLBACK")
                    raise
        finally:
            self._depth = 0
        self.commits += 1

    # faults
    def load_faults(self) -> dict[str, FaultRecord]:
        """Every stored fault by code."""
        return {code: FaultRecord.from_dict(orjson.loads(body))
                for code, body in self.conn.execute("SELECT code, body FROM faults")}

    def put_faults(self, records: Iterable[FaultRecord]) -> None:
        """Insert or replace records."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO faults (code, body) VALUES (?, ?)",
            [(r.code, r.to_json()) for r in records])

    def write_batch(self, batch: StoreBatch) -> None:
        """Everything one flush or clear changed, in one commit."""
        with self.transaction():
            if batch.faults:
                self.conn.executemany(
                    "INSERT OR REPLACE INTO faults (code, body) VALUES (?, ?)", batch.faults)
            if batch.dedup:
                self.put_dedup(batch.dedup, batch.at_ns)
            if batch.meta:
                self.conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                      list(batch.meta.items()))
            if batch.drop_snapshots:
                self.delete_snapshots(batch.drop_snapshots)

    def load_state(self) -> tuple[dict[str, FaultRecord], dict[str, set[int]], Any]:
        """Faults, dedup keys and correlation state, as a start or a reload needs them."""
        return self.load_faults(), self.load_dedup(), self.get_meta("correlation", {})

    # freeze frames
    def put_snapshots(self, code: str, frames: list[dict[str, Any]]) -> None:
        """Replace the frames of a fault."""
        with self.transaction():
            self.conn.execute("DELETE FROM snapshots WHERE code = ?", (code,))
            self.conn.executemany(
                "INSERT INTO snapshots (code, idx, body) VALUES (?, ?, ?)",
                [(code, i, orjson.dumps(f)) for i, f in enumerate(frames)])

    def snapshots(self, code: str) -> list[dict[str, Any]]:
        """Frames of a fault in capture order."""
        return [orjson.loads(b) for (b,) in self.conn.execute(
            "SELECT body FROM snapshots WHERE code = ? ORDER BY idx", (code,))]

    def delete_snapshots(self, codes: Iterable[str]) -> None:
        """Drop the frames of these faults."""
        self.conn.executemany("DELETE FROM snapshots WHERE code = ?", [(c,) for c in codes])

    def codes_with_snapshots(self) -> set[str]:
        """Faults that have at least one frame."""
        return {c for (c,) in self.conn.execute("SELECT DISTINCT code FROM snapshots")}

    # reporter dedup keys
    def put_dedup(self, keys: Iterable[tuple[str, int]], at_ns: int) -> None:
        """Remember (reporter, seq) pairs as applied."""
        self.conn.executemany("INSERT OR IGNORE INTO dedup (reporter, seq, at_ns) VALUES (?,?,?)",
                              [(r, s, at_ns) for r, s in keys])

    def load_dedup(self) -> dict[str, set[int]]:
        """Every remembered (reporter, seq) pair, grouped by reporter."""
        out: dict[str, set[int]] = {}
        for reporter, seq in self.conn.execute("SELECT reporter, seq FROM dedup"):
            out.setdefault(reporter, set()).add(seq)
        return out

    def prune_dedup(self, before_ns: int) -> int:
        """Forget pairs applied before this time; returns how many."""
        with self.transaction():
            cur = self.conn.execute("DELETE FROM dedup WHERE at_ns < ?", (before_ns,))
        return cur.rowcount

    def dedup_keys_before(self, before_ns: int) -> list[tuple[str, int]]:
        """Pairs that prune_dedup(before_ns) would forget."""
        return list(self.conn.execute("SELECT reporter, seq FROM dedup WHERE at_ns < ?",
                                      (before_ns,)))

    # small values
    def get_meta(self, key: str, default: Any = None) -> Any:
        """A JSON value stored under key."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return orjson.loads(row[0]) if row else default

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON value under key (a commit of its own unless in a transaction)."""
        with self.transaction():
            self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                              (key, orjson.dumps(value)))

    def close(self) -> None:
        """Stop the checkpointer and close the database."""
        self._stop.set()
        if self._checkpointer is not None:
            self._checkpointer.join(timeout=5.0)
        self.conn.close()


@dataclass
class StoreBatch:
    """Rows of one commit, serialized on the event loop (the records keep changing there)."""

    faults: list[tuple[str, bytes]] = field(default_factory=list)
    dedup: list[tuple[str, int]] = field(default_factory=list)
    at_ns: int = 0
    meta: dict[str, bytes] = field(default_factory=dict)  # key -> JSON
    drop_snapshots: list[str] = field(default_factory=list)


class StateDirLock(DirLock):
    """The fault manager's lock on its state directory."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, LOCK_NAME)


def open_store(state_dir: str, storage: StorageHealth | None = None
               ) -> tuple[FaultStore, StateDirLock | None]:
    """The fault database under state_dir; in memory (with a warning) if another gateway owns
    it; in memory until it can be written (storage health says so) if it cannot be opened."""
    directory = Path(state_dir).expanduser() if state_dir else default_state_dir()
    lock = StateDirLock(directory)
    try:
        owned = lock.acquire()
    except OSError as exc:
        return _waiting(directory, None, storage, exc), None
    if not owned:
        log.warning("setting 'state_dir': %s is in use by another gateway; faults are kept in "
                    "memory only", directory)
        return FaultStore(None, storage), None
    try:
        store = FaultStore(directory / DB_NAME, storage)
    except (OSError, sqlite3.Error) as exc:
        return _waiting(directory, lock, storage, exc), lock
    store.lock = lock
    store.storage.check(STORE, directory)  # opened on a full disk: /health says so at once
    return store, lock


def _waiting(directory: Path, lock: StateDirLock | None, storage: StorageHealth | None,
             exc: BaseException) -> FaultStore:
    """An in-memory store that opens the database once it can (dbfile.py)."""
    store = FaultStore(None, storage)
    err = StorageWriteError(STORE, directory, exc)
    store.storage.failed(err)
    log.warning("setting 'state_dir': cannot open the fault database in %s (%s); faults are "
                "kept in memory and stored once it can be written", directory, err.reason)
    seeded = seed(store.conn, directory / DB_NAME)
    if seeded:
        log.warning("fault database %s: %d faults read (read-only)", directory / DB_NAME,
                    len(seeded))
    store.waiting = DiskWait(directory, lock, seeded)
    return store
