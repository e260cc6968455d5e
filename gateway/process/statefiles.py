"""State files are private: once the gateway starts, what it creates is 0600 (directories 0700).

Every store (faults, triggers, fault-trigger rules, refresh tokens, recordings, uploads,
updates, scripts) creates its files through the process umask, so one setting at start covers
them all, including stores added later. Child processes (update hooks, scripts) get the umask
the gateway was started with back (`child_umask`).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700
MAX_FIXED_ENTRIES = 100_000  # entries of an older state directory tightened at start
INSTALLED = ("updates", "installed")  # installed software keeps its package's modes

_started_umask: int | None = None


def default_state_dir() -> Path:
    """~/.local/state/diag-gateway (XDG_STATE_HOME honoured)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "diag-gateway"


def child_umask() -> int:
    """The umask the gateway was started with (for the processes it runs)."""
    return _started_umask if _started_umask is not None else 0o022


def private_by_default(state_dir: str) -> Path:
    """Set the private umask and make the state directory (and what an older gateway left in
    it) private; returns the directory."""
    global _started_umask
    previous = os.umask(PRIVATE_UMASK)
    if _started_umask is None:
        _started_umask = previous
    directory = Path(state_dir).expanduser() if state_dir else default_state_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        tighten(directory)
    except OSError as exc:
        log.warning("setting 'state_dir': cannot make %s private (%s)", directory, exc.strerror)
    return directory


def _ours(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid()


def tighten(directory: Path) -> int:
    """chmod the directory 0700 and take group and other bits off the entries below it (own
    entries only, no links followed, installed software skipped); returns how many changed."""
    changed = 0
    st = directory.stat()
    if not _ours(st) or st.st_mode & stat.S_ISVTX:  # never a shared directory such as /tmp
        log.warning("setting 'state_dir': %s is not a private directory of this user; its "
                    "files are created private, the directory is left as it is", directory)
        return 0
    if stat.S_IMODE(st.st_mode) != DIR_MODE:
        os.chmod(directory, DIR_MODE)
        changed += 1
    seen = 0
    skip = directory.joinpath(*INSTALLED)
    for root, dirs, files in os.walk(directory):
        here = Path(root)
        dirs[:] = [d for d in dirs if here / d != skip]
        for name in [*dirs, *files]:
            seen += 1
            if seen > MAX_FIXED_ENTRIES:
                return changed
            path = here / name
            try:
                st = path.lstat()
                if stat.S_ISLNK(st.st_mode) or not _ours(st):
                    continue
                if st.st_mode & PRIVATE_UMASK:  # group or other may read, write or enter
                    os.chmod(path, stat.S_IMODE(st.st_mode) & ~PRIVATE_UMASK)
                    changed += 1
            except OSError:
                continue
    return changed
