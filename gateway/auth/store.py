"""Refresh tokens on disk (SQLite): sha256 hashes, families, single use, revocation, expiry.

Only hashes are stored: a copy of the file grants nothing. Refresh tokens are 256-bit random
strings, so a plain sha256 (no salt, no stretching) is enough and allows lookup by hash.
Every change is one SQLite transaction with synchronous=FULL, so a crash never leaves half a
rotation behind and a token marked used stays used across restarts.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from ..process.storage import StorageHealth, StorageWriteError

DEFAULT_STATE_DIR = "~/.local/state/diag-gateway"
FILE_NAME = "refresh_tokens.sqlite3"
STORE = "refresh-tokens"  # the store's name in storage health and 507 messages

_SCHEMA = """
CREATE TABLE IF NOT EXISTS family (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    revoked_at REAL,
    reason TEXT
);
CREATE TABLE IF NOT EXISTS refresh (
    hash TEXT PRIMARY KEY,
    family TEXT NOT NULL REFERENCES family(id),
    client_id TEXT NOT NULL,
    role TEXT NOT NULL,
    issued_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    used_at REAL
);
CREATE INDEX IF NOT EXISTS refresh_family ON refresh(family);
"""


def token_hash(token: str) -> str:
    """The stored form of a refresh token."""
    return hashlib.sha256(token.encode()).hexdigest()


def store_path(state_dir: str) -> Path:
    """Where the refresh-token file lives below the state directory."""
    return Path(state_dir or DEFAULT_STATE_DIR).expanduser() / "auth" / FILE_NAME


class RefreshRefused(Exception):
    """A refresh token that cannot be used: reason is unknown, expired, revoked or reused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Grant:
    """The family, client and role a refresh token belongs to."""

    family: str
    client_id: str
    role: str


class RefreshStore:
    """Refresh-token records in one SQLite file; methods are atomic and thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.storage = StorageHealth()  # the gateway's, set by auth/enforce.py

    def _writing(self) -> AbstractContextManager[None]:
        """A write: StorageWriteError (507, /health degraded) when the disk refuses it."""
        return self.storage.writing(STORE, self.path.parent)

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            with self._writing():
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                # Create the file owner-only before SQLite opens it with the umask's mode.
                os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
                db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA synchronous=FULL")
                db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def close(self) -> None:
        """Close the file (reopened on next use)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def start_family(self, family: str, thash: str, client_id: str, role: str, now: float,
                     expires_at: float, family_expires_at: float) -> None:
        """A new family with its first refresh token."""
        with self._lock:
            db = self._conn()
            with self._writing(), _transaction(db):
                db.execute("INSERT INTO family VALUES (?, ?, ?, ?, NULL, NULL)",
                           (family, client_id, now, family_expires_at))
                db.execute("INSERT INTO refresh VALUES (?, ?, ?, ?, ?, ?, NULL)",
                           (thash, family, client_id, role, now, expires_at))

    def rotate(self, old_hash: str, new_hash: str, now: float, expires_at: float,
               family_expires_at: float) -> Grant:
        """Use a refresh token once and store its successor; a reused one revokes its family.

        RefreshRefused when the token is unknown, expired, revoked or already used.
        """
        with self._lock:
            db = self._conn()
            with self._writing(), _transaction(db):
                row = db.execute(
                    "SELECT r.family, r.client_id, r.role, r.expires_at, r.used_at, f.revoked_at"
                    " FROM refresh r JOIN family f ON f.id = r.family WHERE r.hash = ?",
                    (old_hash,)).fetchone()
                if row is None:
                    raise RefreshRefused("unknown")
                family, client_id, role, expires, used_at, revoked_at = row
                if revoked_at is not None:
                    raise RefreshRefused("revoked")
                if used_at is not None:
                    _revoke(db, family, now, "reuse")
                    raise _Commit(RefreshRefused("reused"))
                if now >= expires:
                    raise RefreshRefused("expired")
                db.execute("UPDATE refresh SET used_at = ? WHERE hash = ?", (now, old_hash))
                db.execute("INSERT INTO refresh VALUES (?, ?, ?, ?, ?, ?, NULL)",
                           (new_hash, family, client_id, role, now, expires_at))
                db.execute("UPDATE family SET expires_at = MAX(expires_at, ?) WHERE id = ?",
                           (family_expires_at, family))
                return Grant(family, client_id, role)

    def revoke_token(self, thash: str, now: float, reason: str = "revoked") -> str | None:
        """Revoke the family of a refresh token; its family id, or None when unknown."""
        with self._lock:
            db = self._conn()
            with self._writing(), _transaction(db):
                row = db.execute("SELECT family FROM refresh WHERE hash = ?",
                                 (thash,)).fetchone()
                if row is None:
                    return None
                _revoke(db, row[0], now, reason)
                return str(row[0])

    def revoke_family(self, family: str, now: float, reason: str) -> bool:
        """Revoke a family by id; False when unknown."""
        with self._lock:
            db = self._conn()
            with self._writing(), _transaction(db):
                return _revoke(db, family, now, reason)

    def revoked_families(self, now: float) -> dict[str, float]:
        """Revoked families that may still have live access tokens: id -> expiry. On a full
        or read-only disk the file is read read-only (the store opens on its next write)."""
        query = "SELECT id, expires_at FROM family WHERE revoked_at IS NOT NULL AND expires_at > ?"
        with self._lock:
            try:
                rows = self._conn().execute(query, (now,)).fetchall()
            except StorageWriteError as exc:
                if not exc.insufficient:
                    raise
                rows = self._read_only(query, (now,), exc)
        return {str(f): float(e) for f, e in rows}

    def _read_only(self, query: str, args: tuple[object, ...], exc: StorageWriteError
                   ) -> list[tuple[object, ...]]:
        """Rows of a query on the file opened read-only; exc again when it cannot be read
        (nothing when there is no file yet)."""
        try:
            if self.path.stat().st_size == 0:
                return []
        except FileNotFoundError:
            return []
        for mode in ("mode=ro", "immutable=1"):
            try:
                db = sqlite3.connect(f"{self.path.absolute().as_uri()}?{mode}", uri=True)
                try:
                    return db.execute(query, args).fetchall()
                finally:
                    db.close()
            except sqlite3.Error:
                continue
        raise exc

    def prune(self, now: float) -> int:
        """Drop expired tokens and families; the number of rows removed."""
        with self._lock:
            db = self._conn()
            with self._writing(), _transaction(db):
                n = db.execute("DELETE FROM refresh WHERE expires_at <= ?", (now,)).rowcount
                n += db.execute(
                    "DELETE FROM family WHERE expires_at <= ? AND id NOT IN "
                    "(SELECT family FROM refresh)", (now,)).rowcount
        return int(n)

    def count(self) -> tuple[int, int]:
        """(refresh tokens, families) stored."""
        with self._lock:
            db = self._conn()
            tokens = db.execute("SELECT COUNT(*) FROM refresh").fetchone()[0]
            families = db.execute("SELECT COUNT(*) FROM family").fetchone()[0]
        return int(tokens), int(families)


def _revoke(db: sqlite3.Connection, family: str, now: float, reason: str) -> bool:
    cur = db.execute("UPDATE family SET revoked_at = COALESCE(revoked_at, ?),"
                     " reason = COALESCE(reason, ?) WHERE id = ?", (now, reason, family))
    return cur.rowcount > 0


class _Commit(Exception):
    """Raised inside a transaction: commit what was done, then raise `error`."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT; rollback on error, except _Commit which commits first."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, typ: object, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, _Commit):
            try:
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # a full disk: SQLite may have rolled back already
                    self.db.execute("ROLLBACK")
                raise
            if isinstance(exc, _Commit):
                raise exc.error from None
        elif self.db.in_transaction:
            self.db.execute("ROLLBACK")
