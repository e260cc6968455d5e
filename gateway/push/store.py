"""Persistent triggers in SQLite under state_dir (one row per trigger, JSON columns)."""

from __future__ import annotations

import json
import logging
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..process.storage import StorageHealth, StorageWriteError

log = logging.getLogger(__name__)
STORE = "triggers"  # the store's name in storage health and 507 messages

SCHEMA = """
CREATE TABLE IF NOT EXISTS triggers (
    id TEXT PRIMARY KEY,
    entity_type TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL,
    status TEXT NOT NULL,
    previous TEXT,
    has_previous INTEGER NOT NULL DEFAULT 0
);
"""


class TriggerStore:
    """Rows of persistent triggers; ':memory:' when no directory is given."""

    def __init__(self, path: str | Path | None, storage: StorageHealth | None = None) -> None:
        self.path = str(path) if path else ":memory:"
        self.directory = str(Path(path).parent) if path else ":memory:"
        self.storage = storage or StorageHealth()  # the gateway's, set by push/service.py
        self.pending = False  # not opened at start: its rows are served from memory meanwhile
        try:
            self.db = _open(self.path)
        except (OSError, sqlite3.Error) as exc:  # a full or read-only disk: served, 507
            self.storage.failed(StorageWriteError(STORE, self.directory, exc))
            log.warning("persistent triggers: cannot open %s (%s); stored triggers are read "
                        "only and new ones answer 507 until it can be written", self.path, exc)
            self.db = _open(":memory:")
            _seed(self.db, Path(self.path))
            self.pending = True

    def _writing(self) -> AbstractContextManager[None]:
        """A write: StorageWriteError (507, /health degraded) when the disk refuses it (the
        file is opened first when it could not be at start)."""
        if self.pending:
            with self.storage.writing(STORE, self.directory):
                db = _open(self.path)
            self.db.close()
            self.db, self.pending = db, False
            log.warning("persistent triggers: %s opened", self.path)
        return self.storage.writing(STORE, self.directory)

    def put(self, trigger_id: str, entity_type: str, entity_id: str, body: dict[str, Any],
            created_at: float, expires_at: float | None, status: str = "active") -> None:
        """Insert or replace a trigger row."""
        with self._writing():
            self.db.execute(
                "INSERT OR REPLACE INTO triggers (id, entity_type, entity_id, body, "
                "created_at, expires_at, status) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (trigger_id, entity_type, entity_id, json.dumps(body), created_at, expires_at,
                 status))

    def set_expiry(self, trigger_id: str, expires_at: float | None) -> None:
        """A new expiry time (PUT lifetime)."""
        with self._writing():
            self.db.execute("UPDATE triggers SET expires_at = ? WHERE id = ?",
                            (expires_at, trigger_id))

    def set_previous(self, rows: list[tuple[str, Any]]) -> None:
        """The last evaluated value of each trigger."""
        with self._writing(), self.db:
            self.db.executemany(
                "UPDATE triggers SET previous = ?, has_previous = 1 WHERE id = ?",
                [(json.dumps(value), tid) for tid, value in rows])

    def terminate(self, trigger_id: str) -> None:
        """Mark a row terminated (kept for the record)."""
        with self._writing():
            self.db.execute("UPDATE triggers SET status = 'terminated' WHERE id = ?",
                            (trigger_id,))

    def delete(self, trigger_id: str) -> None:
        """Remove a row."""
        with self._writing():
            self.db.execute("DELETE FROM triggers WHERE id = ?", (trigger_id,))

    def active(self) -> list[dict[str, Any]]:
        """Every active row as a dict (body and previous decoded; bad rows skipped)."""
        out = []
        for row in self.db.execute(
                "SELECT id, entity_type, entity_id, body, created_at, expires_at, previous, "
                "has_previous FROM triggers WHERE status = 'active' ORDER BY created_at"):
            try:
                out.append({"id": row[0], "entity_type": row[1], "entity_id": row[2],
                            "body": json.loads(row[3]), "created_at": row[4],
                            "expires_at": row[5],
                            "previous": json.loads(row[6]) if row[6] is not None else None,
                            "has_previous": bool(row[7])})
            except (TypeError, ValueError):
                log.warning("stored trigger %s is unreadable; skipped", row[0])
        return out

    def ids(self) -> list[str]:
        """Every stored id (so new ids continue past them)."""
        return [r[0] for r in self.db.execute("SELECT id FROM triggers")]

    def close(self) -> None:
        """Close the database."""
        self.db.close()


def _open(path: str) -> sqlite3.Connection:
    """The trigger database at path (":memory:" for none); closed again if it cannot be set
    up."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
    except BaseException:
        db.close()
        raise
    return db


def _seed(memory: sqlite3.Connection, path: Path) -> None:
    """Copy the rows of an existing file that cannot be opened for writing (read-only)."""
    try:
        if path.stat().st_size == 0:
            return
    except OSError:
        return
    for query in ("mode=ro", "immutable=1"):
        try:
            src = sqlite3.connect(f"{path.absolute().as_uri()}?{query}", uri=True)
            try:
                rows = src.execute("SELECT * FROM triggers").fetchall()
            finally:
                src.close()
        except sqlite3.Error:
            continue
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            memory.executemany(f"INSERT OR REPLACE INTO triggers VALUES ({marks})", rows)
        return
