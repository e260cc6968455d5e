"""Bulk-data uploads on disk: one directory per upload, moved into place only when complete.

Layout: `<root>/<category>/<upload_id>/data` and `meta.json`. An upload is streamed into
`<root>/<category>/.incoming-<token>/` (same file system, so the final move is a rename);
a failed, interrupted or oversize upload removes that directory, and any left over by a
crash is removed at start. Methods other than `load` run on the event loop and do only
metadata work; file writes happen in `Incoming.write`, which callers run off the loop.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import uuid
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from gateway.process.storage import StorageHealth, StorageWriteError

from .index import fsync_dir, write_atomic

log = logging.getLogger(__name__)

INCOMING_PREFIX = ".incoming-"
DATA_NAME = "data"
META_NAME = "meta.json"
STORE = "bulk-data"  # the store's name in storage health and 507 messages


@dataclass
class Upload:
    """One uploaded file and what came with it."""

    id: str
    category: str
    owner_kind: str  # entity type word of the entity it was uploaded to (components, apps)
    owner_id: str
    name: str
    mimetype: str
    size: int
    created_ns: int
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Upload:
        """Inverse of to_dict (unknown keys ignored)."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


class Incoming:
    """An upload being received into a temporary directory."""

    def __init__(self, directory: Path, store: UploadStore) -> None:
        self.directory = directory
        self.size = 0
        self.store = store
        self._file: BinaryIO | None = open(directory / DATA_NAME, "wb")  # noqa: SIM115

    def write(self, chunk: bytes) -> None:
        """Append (blocking); StorageWriteError when the disk is full."""
        assert self._file is not None
        with self.store.writing():
            self._file.write(chunk)
        self.size += len(chunk)

    def finish(self) -> None:
        """Flush and close the data file durably (blocking)."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def abort(self) -> None:
        """Remove everything received (blocking)."""
        if self._file is not None:
            with contextlib.suppress(OSError):  # a full disk fails the flush of the close
                self._file.close()
            self._file = None
        shutil.rmtree(self.directory, ignore_errors=True)


class UploadStore:
    """Uploads by category and id."""

    def __init__(self, root: Path, storage: StorageHealth | None = None) -> None:
        self.root = root
        self.uploads: dict[tuple[str, str], Upload] = {}
        self.storage = storage or StorageHealth()

    def writing(self) -> AbstractContextManager[None]:
        """A write below root: StorageWriteError (booked in storage health) when it fails."""
        return self.storage.writing(STORE, self.root)

    def load(self) -> int:
        """Read every upload's meta.json; remove unfinished ones (blocking). Returns removed."""
        removed = 0
        try:  # a full or read-only disk at start: served, /health says so, uploads fail (507)
            with self.writing():
                self.root.mkdir(parents=True, exist_ok=True)
        except StorageWriteError:
            if not self.root.is_dir():
                return removed
        self.storage.check(STORE, self.root)  # a full disk at start: /health says so at once
        for cat_dir in sorted(p for p in self.root.iterdir() if p.is_dir()):
            for entry in sorted(p for p in cat_dir.iterdir() if p.is_dir()):
                if entry.name.startswith(INCOMING_PREFIX):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed += 1
                    continue
                try:
                    meta = json.loads((entry / META_NAME).read_text(encoding="utf-8"))
                    up = Upload.from_dict(meta)
                except (OSError, ValueError, TypeError):
                    log.warning("bulk-data: %s has no readable %s; ignored", entry, META_NAME)
                    continue
                if (entry / DATA_NAME).is_file():
                    self.uploads[(up.category, up.id)] = up
        return removed

    def begin(self, category: str) -> Incoming:
        """A fresh temporary directory for an upload into category (blocking, small)."""
        cat_dir = self.root / category
        directory = cat_dir / f"{INCOMING_PREFIX}{secrets.token_hex(8)}"
        with self.writing():
            cat_dir.mkdir(parents=True, exist_ok=True)
            directory.mkdir()
            try:
                return Incoming(directory, self)
            except BaseException:
                shutil.rmtree(directory, ignore_errors=True)
                raise

    def commit(self, incoming: Incoming, up: Upload) -> Upload:
        """Write meta.json and move the upload into place (blocking); listed only once all
        of it is on disk (a failure leaves nothing behind but the incoming directory)."""
        up.id = up.id or str(uuid.uuid4())
        final = self.root / up.category / up.id
        with self.writing():
            incoming.finish()
            up.size = incoming.size
            write_atomic(incoming.directory / META_NAME, json.dumps(up.to_dict()).encode())
            incoming.directory.rename(final)
            try:
                fsync_dir(final.parent)
            except BaseException:
                shutil.rmtree(final, ignore_errors=True)
                raise
        self.uploads[(up.category, up.id)] = up
        return up

    def get(self, category: str, upload_id: str) -> Upload | None:
        """One upload."""
        return self.uploads.get((category, upload_id))

    def list(self, category: str) -> list[Upload]:
        """Uploads of a category, oldest first."""
        return sorted((u for (c, _), u in self.uploads.items() if c == category),
                      key=lambda u: (u.created_ns, u.id))

    def path(self, up: Upload) -> Path:
        """The data file of an upload."""
        return self.root / up.category / up.id / DATA_NAME

    def remove(self, up: Upload) -> Path:
        """Unindex an upload; returns its directory for the caller to delete off the loop."""
        self.uploads.pop((up.category, up.id), None)
        return self.root / up.category / up.id
