"""The fault database file: opening it, and what the store does while it cannot be opened.

When the state directory is full or read-only at start (or SQLite fails to create the file),
the fault store keeps faults in an in-memory database, seeded from the file when it can
still be read, and waits: the first write or storage probe that finds the directory writable
opens (creates) the file and merges everything held in memory into it in one transaction.
Nothing reported meanwhile is lost; it is on disk once /health is healthy again.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MEMORY = ":memory:"
RETRY_S = 1.0  # a write tries to open the file at most this often (the probe: every 2 s)
TABLES = ("faults", "snapshots", "dedup", "meta")
MAX_META = frozenset({"event_seq"})  # merged as the larger value: ids above every id used

SCHEMA = """
CREATE TABLE IF NOT EXISTS faults (code TEXT PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (code TEXT NOT NULL, idx INTEGER NOT NULL,
    body BLOB NOT NULL, PRIMARY KEY (code, idx));
CREATE TABLE IF NOT EXISTS dedup (reporter TEXT NOT NULL, seq INTEGER NOT NULL,
    at_ns INTEGER NOT NULL, PRIMARY KEY (reporter, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS dedup_at ON dedup (at_ns);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
"""


def connect(path: str) -> sqlite3.Connection:
    """The database at path (":memory:" for none) in WAL mode with the schema; raises
    sqlite3.Error (the connection closed) when it cannot be opened or created."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        if path != MEMORY:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.executescript(SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


def merge(src: sqlite3.Connection, dst: sqlite3.Connection,
          seeded: dict[str, bytes] | None = None) -> int:
    """Copy src's rows into dst (the caller's transaction): src's faults, frames (per fault)
    and values win, dedup keys add up, event_seq is the larger one; faults whose body is still
    the one seeded from dst are left as dst has them (a WAL the seed could not read may hold
    newer ones). Returns faults copied."""
    seeded = seeded or {}
    faults = [(code, body) for code, body in src.execute("SELECT code, body FROM faults")
              if seeded.get(code) != body]
    dst.executemany("INSERT OR REPLACE INTO faults (code, body) VALUES (?, ?)", faults)
    frames = src.execute("SELECT code, idx, body FROM snapshots").fetchall()
    dst.executemany("DELETE FROM snapshots WHERE code = ?", sorted({(c,) for c, _, _ in frames}))
    dst.executemany("INSERT INTO snapshots (code, idx, body) VALUES (?, ?, ?)", frames)
    dst.executemany("INSERT OR IGNORE INTO dedup (reporter, seq, at_ns) VALUES (?, ?, ?)",
                    src.execute("SELECT reporter, seq, at_ns FROM dedup").fetchall())
    for key, value in src.execute("SELECT key, value FROM meta").fetchall():
        if key in MAX_META:
            row = dst.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row is not None and _number(row[0]) > _number(value):
                continue
        dst.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
    return len(faults)


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def seed(memory: sqlite3.Connection, path: Path) -> dict[str, bytes]:
    """Copy what the file at path holds into the in-memory database, read-only (a full or
    read-only disk can still be read); the faults read (code -> body), none when it cannot be."""
    try:
        if path.stat().st_size == 0:  # nothing yet (left by a failed create)
            return {}
    except OSError:
        return {}
    for query in ("mode=ro", "immutable=1"):  # immutable: no -shm needed (misses a WAL)
        try:
            src = sqlite3.connect(f"{path.absolute().as_uri()}?{query}", uri=True)
        except sqlite3.Error:
            continue
        try:
            memory.execute("BEGIN")
            merge(src, memory)
            memory.execute("COMMIT")
            return dict(memory.execute("SELECT code, body FROM faults").fetchall())
        except sqlite3.Error as exc:
            if memory.in_transaction:
                memory.execute("ROLLBACK")
            log.debug("reading %s (%s): %s", path, query, exc)
        finally:
            src.close()
    log.warning("the fault database %s cannot be read; its faults are listed once it can be "
                "opened", path)
    return {}


@dataclass
class DiskWait:
    """An in-memory fault store's wait for its database file."""

    directory: Path
    lock: Any = None  # the state directory's lock once held (StateDirLock)
    seeded: dict[str, bytes] = field(default_factory=dict)  # faults read from the file
    attempts: int = 0
    next_try_s: float = 0.0

    def __post_init__(self) -> None:
        self.next_try_s = time.monotonic() + RETRY_S

    def due(self) -> bool:
        """A write may try to open the file now (at most every RETRY_S)."""
        return time.monotonic() >= self.next_try_s

    def tried(self) -> None:
        """Book an attempt."""
        self.attempts += 1
        self.next_try_s = time.monotonic() + RETRY_S
