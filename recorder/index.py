"""The on-disk index of finished recordings, its recovery at start, and retention (pure parts).

Layout of the storage directory:
  index.json                 complete recordings (atomically replaced)
  recorder.lock              held by the gateway using the directory
  <recording_id>/            a finished bag: <id>_0.<ext>, metadata.yaml, recording.json
  <recording_id>.partial/    a bag being written; never served, discarded at start

A bag directory is renamed into place only once complete, so anything that was mid-write
when the process died is a `.partial` directory. At start the index is reconciled with
the directories: entries whose bag is gone are dropped, complete bags missing from the
index (a crash between rename and index write) are recovered from their recording.json.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gateway.process.dirlock import DirLock

log = logging.getLogger(__name__)

INDEX_NAME = "index.json"
SIDECAR_NAME = "recording.json"
LOCK_NAME = "recorder.lock"
PARTIAL_SUFFIX = ".partial"
ID_PATTERN = re.compile(r"^(rec|fault)_[0-9]{8}T[0-9]{9}Z_[0-9a-f]+$")


@dataclass
class Recording:
    """One finished recording (the bag directory is named by its id)."""

    id: str
    format: str
    file: str  # storage file name inside the bag directory
    created_ns: int  # when the first fault confirmed
    start_ns: int  # window start (pre-fault)
    end_ns: int  # window end (post-fault)
    size: int = 0
    message_count: int = 0
    fault_codes: list[str] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)  # code -> reporting nodes
    topics: list[str] = field(default_factory=list)

    @property
    def duration_sec(self) -> float:
        """Length of the window in seconds."""
        return round(max(0, self.end_ns - self.start_ns) / 1e9, 3)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Recording:
        """Inverse of to_dict (unknown keys ignored)."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class Recovery:
    """What reconciling the index with the directory did."""

    kept: int = 0
    recovered: list[str] = field(default_factory=list)
    discarded_partial: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


class RecorderLock(DirLock):
    """An exclusive flock on the recording storage directory."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, LOCK_NAME)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace path with data: temporary file, fsync, rename, fsync the directory."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half file behind
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename inside directory durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _complete(bag: Path, rec: Recording) -> bool:
    data = bag / rec.file
    return (bag / "metadata.yaml").is_file() and data.is_file() and (
        rec.size == 0 or data.stat().st_size == rec.size)


class RecordingIndex:
    """Finished recordings by id; persisted as index.json in the storage directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.recordings: dict[str, Recording] = {}

    def bag_dir(self, rec_id: str) -> Path:
        """The directory of a recording."""
        return self.root / rec_id

    def file_of(self, rec: Recording) -> Path:
        """The storage file served for a recording."""
        return self.root / rec.id / rec.file

    def load(self) -> Recovery:
        """Read index.json and reconcile it with the directories (blocking: call off-loop)."""
        self.root.mkdir(parents=True, exist_ok=True)
        report = Recovery()
        known: dict[str, Recording] = {}
        try:
            tree = json.loads((self.root / INDEX_NAME).read_text(encoding="utf-8"))
            for d in tree.get("recordings", []):
                rec = Recording.from_dict(d)
                known[rec.id] = rec
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError) as exc:
            log.warning("recorder: %s unreadable (%s); rebuilding it from the bag directories",
                        self.root / INDEX_NAME, exc)
        for entry in sorted(self.root.iterdir()):
            name = entry.name
            if not entry.is_dir():
                continue
            if name.endswith(PARTIAL_SUFFIX) and ID_PATTERN.match(name[:-len(PARTIAL_SUFFIX)]):
                shutil.rmtree(entry, ignore_errors=True)  # mid-write: never served
                report.discarded_partial.append(name[:-len(PARTIAL_SUFFIX)])
                continue
            if not ID_PATTERN.match(name):
                continue
            indexed = known.pop(name, None)
            if indexed is not None and _complete(entry, indexed):
                self.recordings[name] = indexed
                report.kept += 1
                continue
            sidecar = _read_sidecar(entry)
            if sidecar is not None and _complete(entry, sidecar):
                self.recordings[name] = sidecar
                report.recovered.append(name)
            else:
                shutil.rmtree(entry, ignore_errors=True)
                report.dropped.append(name)
        report.dropped.extend(known)  # indexed, but the bag directory is gone
        return report

    def dumps(self) -> bytes:
        """index.json content."""
        recs = sorted(self.recordings.values(), key=lambda r: (r.created_ns, r.id))
        return json.dumps({"version": 1, "recordings": [r.to_dict() for r in recs]},
                          indent=1).encode()

    def add(self, rec: Recording) -> None:
        """Index a finished recording."""
        self.recordings[rec.id] = rec

    def remove(self, rec_id: str) -> Recording | None:
        """Unindex a recording (the caller deletes its directory)."""
        return self.recordings.pop(rec_id, None)

    def get(self, rec_id: str) -> Recording | None:
        """A recording by id."""
        return self.recordings.get(rec_id)

    def for_code(self, code: str) -> list[Recording]:
        """Recordings a fault is attached to, newest first."""
        return newest_first(r for r in self.recordings.values() if code in r.fault_codes)

    def total_bytes(self) -> int:
        """Storage used by finished recordings."""
        return sum(r.size for r in self.recordings.values())


def _read_sidecar(bag: Path) -> Recording | None:
    try:
        return Recording.from_dict(json.loads((bag / SIDECAR_NAME).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def newest_first(recs: Iterable[Recording]) -> list[Recording]:
    """Newest first (by creation, then id)."""
    return sorted(recs, key=lambda r: (r.created_ns, r.id), reverse=True)


# retention (pure) -----------------------------------------------------------------------------
def quota_evictions(recs: Iterable[Recording], quota_bytes: int,
                    keep: Iterable[str] = ()) -> list[str]:
    """Ids to delete, oldest first, until the total fits the quota (never those in keep)."""
    keep_set = set(keep)
    ordered = sorted(recs, key=lambda r: (r.created_ns, r.id))
    total = sum(r.size for r in ordered)
    out = []
    for r in ordered:
        if total <= quota_bytes:
            break
        if r.id in keep_set:
            continue
        out.append(r.id)
        total -= r.size
    return out


def per_fault_excess(recs: Iterable[Recording], code: str, max_per_fault: int) -> list[str]:
    """Recordings of a fault beyond the newest max_per_fault (their ids, newest first)."""
    mine = newest_first(r for r in recs if code in r.fault_codes)
    return [r.id for r in mine[max(0, max_per_fault):]]
