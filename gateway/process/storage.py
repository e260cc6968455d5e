"""Storage health: the stores whose writes fail (disk full, read-only, I/O error) and why.

Every store writes inside `StorageHealth.writing(store, directory)`: a failed write becomes a
`StorageWriteError` naming the store, the directory and its free space (the HTTP layer answers
507 for a full or read-only file system), and marks the store failing; the next successful
write, or a probe write into the same directory (`probe`, run by `probe_loop` while something
fails), marks it writable again. /health reads `failing()`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FULL = "full"  # ENOSPC, EDQUOT, SQLITE_FULL
READ_ONLY = "read-only"  # EROFS, SQLITE_READONLY: nothing can be stored either
FAILING = "failing"  # any other error of a write (EIO, EACCES, ...)
INSUFFICIENT = frozenset({FULL, READ_ONLY})  # answered 507 Insufficient Storage
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# SQLite primary result codes (the low byte of an extended code).
_SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 8, 10, 13, 14
_ERRNO = {FULL: errno.ENOSPC, READ_ONLY: errno.EROFS, FAILING: errno.EIO}  # of SQLite errors
PROBE_INTERVAL_S = 2.0
PROBE_BYTES = 64 * 1024  # a probe write this large must fit before a store counts as writable


def failure_kind(exc: BaseException) -> str | None:
    """FULL, READ_ONLY or FAILING for an error of a write; None when it is not about storage."""
    if isinstance(exc, StorageWriteError):
        return exc.kind
    if isinstance(exc, OSError):
        if exc.errno is None or isinstance(exc, ConnectionError):
            return None  # a timeout or a peer that went away, not the disk
        if exc.errno in _FULL_ERRNOS:
            return FULL
        return READ_ONLY if exc.errno == errno.EROFS else FAILING
    if isinstance(exc, sqlite3.Error):
        primary = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if primary == _SQLITE_FULL:
            return FULL
        if primary == _SQLITE_READONLY:
            return READ_ONLY
        if primary in (_SQLITE_IOERR, _SQLITE_CANTOPEN):
            return FAILING
    return None


def _statvfs(directory: str | Path) -> os.statvfs_result | None:
    """The file system of directory, or of its nearest existing parent; None when unknown."""
    path = Path(directory)
    for candidate in (path, *path.parents):
        try:
            return os.statvfs(candidate)
        except OSError:
            continue
    return None


def free_bytes(directory: str | Path) -> int | None:
    """Bytes an unprivileged writer may still use on the file system of directory (or of its
    nearest existing parent); None when unknown."""
    st = _statvfs(directory)
    return None if st is None else st.f_bavail * st.f_frsize


def size_text(n: int | None) -> str:
    """1536 -> '1.5 KiB' (unknown: 'unknown')."""
    if n is None:
        return "unknown"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _file_system_state(directory: str | Path) -> str:
    """READ_ONLY or FULL when the file system of directory is, else FAILING (what a SQLite
    error that names no cause, such as "unable to open database file", most likely means)."""
    st = _statvfs(directory)
    if st is None:
        return FAILING
    if st.f_flag & os.ST_RDONLY:
        return READ_ONLY
    return FULL if st.f_bavail == 0 else FAILING


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class StorageWriteError(OSError):
    """A store could not write: which store, where, why and how much space is left (an
    OSError, so code that handles I/O errors handles it too)."""

    def __init__(self, store: str, directory: str | Path, cause: BaseException) -> None:
        self.store = store
        self.directory = str(directory)
        self.cause = cause
        self.kind = failure_kind(cause) or FAILING
        if self.kind == FAILING and isinstance(cause, sqlite3.Error):  # "unable to open"
            self.kind = _file_system_state(directory)
        self.reason = _reason(cause)
        self.free_bytes = free_bytes(directory)
        code = cause.errno if isinstance(cause, OSError) and cause.errno else _ERRNO[self.kind]
        super().__init__(code, self.message)

    def __str__(self) -> str:
        return self.message

    @property
    def insufficient(self) -> bool:
        """The file system is full or read-only (507 Insufficient Storage)."""
        return self.kind in INSUFFICIENT

    @property
    def message(self) -> str:
        """What a client reads: the store, the directory, the cause and the free space."""
        if self.kind == FULL:
            head = "Insufficient storage"
        elif self.kind == READ_ONLY:
            head = "Insufficient storage (read-only file system)"
        else:
            head = "Storage error"
        return (f"{head}: cannot write {self.store} data in {self.directory}: {self.reason}; "
                f"{size_text(self.free_bytes)} free there")

    def parameters(self) -> dict[str, Any]:
        """The error body's parameters."""
        return {"store": self.store, "path": self.directory, "free_bytes": self.free_bytes,
                "reason": self.reason}


@dataclass
class Failure:
    """A store whose writes fail, since when."""

    store: str
    directory: str
    kind: str
    reason: str
    since_ns: int
    last_ns: int
    failures: int
    free_bytes: int | None

    def to_dict(self) -> dict[str, Any]:
        """The /health item."""
        return {"store": self.store, "path": self.directory, "kind": self.kind,
                "reason": self.reason, "since": self.since_ns, "last_failure": self.last_ns,
                "failures": self.failures, "free_bytes": self.free_bytes}

    def warning(self) -> dict[str, Any]:
        """The /health `warnings` item."""
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since_ns / 1e9))
        return {"code": "storage_write_failing",
                "message": f"{self.store}: writes to {self.directory} fail since {since} "
                           f"({self.reason}; {size_text(self.free_bytes)} free)",
                "entity_ids": [], "ros_node_fqns": [], "peer_names": []}


class StorageHealth:
    """The stores whose writes fail now; written from any thread."""

    def __init__(self) -> None:
        self._failing: dict[str, Failure] = {}
        self._lock = threading.Lock()
        self._retries: dict[str, Callable[[], object]] = {}
        self.recoveries = 0

    def failed(self, err: StorageWriteError, now_ns: int | None = None) -> Failure:
        """Book a failed write; the first of a streak is logged (the rest are not)."""
        now = time.time_ns() if now_ns is None else now_ns
        with self._lock:
            f = self._failing.get(err.store)
            if f is None:
                f = self._failing[err.store] = Failure(err.store, err.directory, err.kind,
                                                       err.reason, now, now, 0, None)
                log.error("%s: writes fail (%s); /health is degraded until a write succeeds "
                          "again", err.store, err.message)
            f.directory, f.kind, f.reason = err.directory, err.kind, err.reason
            f.last_ns, f.free_bytes = now, err.free_bytes
            f.failures += 1
            return f

    def ok(self, store: str, now_ns: int | None = None) -> None:
        """Book a successful write: the store is writable again."""
        if store not in self._failing:  # the common case: no lock
            return
        now = time.time_ns() if now_ns is None else now_ns
        with self._lock:
            f = self._failing.pop(store, None)
        if f is not None:
            self.recoveries += 1
            log.warning("%s: writes to %s succeed again after %d failed (%.1f s)", store,
                        f.directory, f.failures, (now - f.since_ns) / 1e9)

    def failing(self) -> list[Failure]:
        """The stores whose last write failed, oldest failure first."""
        with self._lock:
            return sorted(self._failing.values(), key=lambda f: f.since_ns)

    @contextmanager
    def writing(self, store: str, directory: str | Path) -> Iterator[None]:
        """Run a write of store in directory: StorageWriteError (and booked) when it fails."""
        try:
            yield
        except StorageWriteError as inner:
            self.failed(inner)
            raise
        except (OSError, sqlite3.Error) as exc:
            if failure_kind(exc) is None:
                raise
            err = StorageWriteError(store, directory, exc)
            self.failed(err)
            raise err from exc
        self.ok(store)

    def on_probe(self, store: str, retry: Callable[[], object]) -> None:
        """A store that resumes by itself: once a probe write succeeds where it writes, the
        probe calls retry() (blocking; it books ok or failed itself, e.g. by opening the
        store's files) instead of booking the store writable."""
        self._retries[store] = retry

    def check(self, store: str, directory: str | Path) -> bool:
        """At a store's start (blocking): a probe write where it writes; a failure is booked
        (/health names the store from the start, not from its first write). Whether it fit."""
        exc = probe_error(Path(directory))
        if exc is not None:
            self.failed(StorageWriteError(store, directory, exc))
        return exc is None

    def probe(self) -> list[str]:
        """Write and remove a small file where each failing store writes (blocking); returns
        the stores found writable again."""
        back = []
        for f in self.failing():
            if not probe_write(Path(f.directory)):
                continue
            retry = self._retries.get(f.store)
            if retry is None:
                self.ok(f.store)
            else:
                try:
                    retry()
                except Exception:  # booked by retry; the next probe tries again
                    log.debug("%s: retry after a probe write", f.store, exc_info=True)
                if f.store in self._failing:
                    continue
            back.append(f.store)
        return back

    def health(self) -> dict[str, Any]:
        """The x-vendor-storage block of /health."""
        failing = self.failing()
        return {"writable": not failing, "failing": [f.to_dict() for f in failing],
                "recoveries": self.recoveries}

    def warnings(self) -> list[dict[str, Any]]:
        """One /health warning per failing store."""
        return [f.warning() for f in self.failing()]


def probe_write(directory: Path) -> bool:
    """Whether PROBE_BYTES can be written in directory (or its nearest existing parent)."""
    return probe_error(directory) is None


def probe_error(directory: Path) -> OSError | None:
    """Why PROBE_BYTES cannot be written in directory (or its nearest existing parent); None
    when they can."""
    target = next((p for p in (directory, *directory.parents) if p.is_dir()), None)
    if target is None:
        return FileNotFoundError(errno.ENOENT, "no such directory", str(directory))
    try:
        fd, tmp = tempfile.mkstemp(dir=target, prefix=".storage-probe-")
    except OSError as exc:
        return exc
    try:
        view = memoryview(bytes(PROBE_BYTES))
        while view:
            view = view[os.write(fd, view):]
        return None
    except OSError as exc:
        return exc
    finally:
        os.close(fd)
        os.unlink(tmp)


def log_write_failure(logger: logging.Logger, text: str, what: str, exc: BaseException) -> None:
    """Log a failed background write: with its traceback unless it is a storage failure, which
    StorageHealth logged once when the streak began (a full disk logs one line, not one each)."""
    if isinstance(exc, StorageWriteError):
        logger.debug(text, what, exc_info=exc)
    else:
        logger.error(text, what, exc_info=exc)


async def probe_loop(health: StorageHealth, interval_s: float = PROBE_INTERVAL_S) -> None:
    """While a store fails, probe its directory every interval (writes resume by themselves)."""
    while True:
        await asyncio.sleep(interval_s)
        if health.failing():
            try:
                await asyncio.to_thread(health.probe)
            except Exception:  # the loop outlives one bad probe
                log.debug("storage probe", exc_info=True)
