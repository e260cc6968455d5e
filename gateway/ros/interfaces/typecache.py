"""The build cache of run-time interface packages (`<state_dir>/types/`), pruned at start.

Each build is a directory `<key>/` holding `BUILT` once finished (ros/calls/callbuild.py); its age
is that of `BUILT`, whose time is renewed each run that serves the build. At start the
builds older than the age limit go, then the least recently used until the total fits the
size limit; a build in use (served in this process) never goes. Directories left by a build
that never finished (`<key>.tmp<pid>-<n>` of a process that is gone) go as well.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DAY_S = 86400.0
_TMP_RE = re.compile(r"^[0-9a-f]+\.tmp(\d+)-\d+$")


@dataclass(frozen=True)
class CachedBuild:
    """One finished build: its directory name, size in bytes and last use (epoch seconds)."""

    name: str
    size: int
    used: float


def to_prune(builds: list[CachedBuild], max_bytes: int, max_age_s: float, now: float,
             in_use: Collection[str] = ()) -> list[str]:
    """The builds to delete: older than `max_age_s`, then the least recently used until the
    rest fit in `max_bytes`; never one in `in_use`."""
    doomed = [b for b in builds if now - b.used > max_age_s and b.name not in in_use]
    kept = sorted((b for b in builds if b not in doomed), key=lambda b: b.used)
    total = sum(b.size for b in kept)
    for build in kept:
        if total <= max_bytes:
            break
        if build.name in in_use:
            continue
        doomed.append(build)
        total -= build.size
    return [b.name for b in doomed]


def _size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune(root: Path, max_bytes: int, max_age_s: float, now: float,
          in_use: Collection[str] = ()) -> list[str]:
    """Delete what to_prune() says (and unfinished builds of gone processes); the names
    deleted, logged in one line."""
    if not root.is_dir():
        return []
    builds: list[CachedBuild] = []
    gone: list[str] = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir() or entry.is_symlink():
            continue
        tmp = _TMP_RE.match(entry.name)
        if tmp is not None:
            if int(tmp[1]) != os.getpid() and not _alive(int(tmp[1])):
                shutil.rmtree(entry, ignore_errors=True)
                gone.append(entry.name)
            continue
        built = entry / "BUILT"
        try:
            used = built.stat().st_mtime
        except OSError:
            continue  # not a finished build: left alone
        builds.append(CachedBuild(entry.name, _size(entry), used))
    doomed = to_prune(builds, max_bytes, max_age_s, now, in_use)
    for name in doomed:
        shutil.rmtree(root / name, ignore_errors=True)
    if doomed or gone:
        freed = sum(b.size for b in builds if b.name in doomed)
        log.info("type build cache %s: pruned %d build(s) (%.1f MiB; older than %g days or "
                 "over %d MiB): %s%s", root, len(doomed), freed / (1 << 20), max_age_s / DAY_S,
                 max_bytes >> 20, ", ".join(doomed) or "-",
                 f"; unfinished: {', '.join(gone)}" if gone else "")
    return doomed + gone


def touch(prefix: Path) -> None:
    """Mark a build as used now (its age for pruning)."""
    try:
        os.utime(prefix / "BUILT")
    except OSError:
        pass
