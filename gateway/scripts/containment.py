"""Containment of script runs: every descendant of a run belongs to it and ends with it.

A run gets a cgroup v2 of its own where the gateway may create one (as root, with cgroup2
mounted): the launcher joins it before exec, so nothing the script forks, `setsid` or
daemonizes can leave it, and `cgroup.kill` ends them all at once. Elsewhere a run's members
are found by its process group, session, and the `DIAG_EXECUTION_ID` its processes inherit.
A record per run in `<state_dir>/script-runs/` lets a restarted gateway end the runs of one
that was killed.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..process.storage import StorageHealth, log_write_failure

log = logging.getLogger(__name__)

CGROUP_PARENT = "diag-gateway-scripts"
RECORDS = "script-runs"
MARKER = "DIAG_EXECUTION_ID"
_SH = "/bin/sh"
# Joins the run's cgroup, then becomes the script: `sh -c JOIN <cgroup dir> argv...`.
_JOIN = 'echo $$ > "$0/cgroup.procs" || exit 126; exec "$@"'


def cgroup2_root() -> Path | None:
    """The cgroup2 mount where a run cgroup can be created and killed, or None."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            root = Path(parts[1])
            parent = root / CGROUP_PARENT
            try:
                parent.mkdir(mode=0o755, exist_ok=True)
            except OSError:
                continue
            if (root / "cgroup.kill").exists() or (parent / "cgroup.kill").exists():
                return root
    return None


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # fields from 3 (state) on


def _pids() -> Iterator[int]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def marked(execution_id: str) -> list[int]:
    """Live processes whose environment carries DIAG_EXECUTION_ID=<execution_id>."""
    needle = f"{MARKER}={execution_id}\0".encode()
    out = []
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if (env.startswith(needle) or b"\0" + needle in env) and pid != os.getpid():
            out.append(pid)
    return out


def _group_or_session(pgid: int) -> list[int]:
    out = []
    for pid in _pids():
        fields = _stat(pid)
        if fields and fields[0] != "Z" and pgid in (int(fields[2]), int(fields[3])):
            out.append(pid)
    return out


def _signal_all(pids: Iterable[int], sig: int) -> list[int]:
    out = []
    for pid in pids:
        try:
            os.kill(pid, sig)
            out.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return out


@dataclass
class RunBox:
    """The processes of one run: its cgroup (when there is one), its group, its marker."""

    execution_id: str
    cgroup: Path | None
    record: Path | None
    pgid: int | None = None
    storage: StorageHealth | None = None  # a record that cannot be written degrades /health

    def wrap(self, argv: list[str]) -> list[str]:
        """argv that joins the run's cgroup before it execs the script."""
        if self.cgroup is None:
            return argv
        return [_SH, "-c", _JOIN, str(self.cgroup), *argv]

    def started(self, pid: int) -> None:
        """The leader runs: note it in the run record."""
        self.pgid = pid
        self._write_record()

    def members(self) -> list[int]:
        """Live processes of the run."""
        if self.cgroup is not None:
            try:
                text = (self.cgroup / "cgroup.procs").read_text()
            except OSError:
                text = ""
            pids = {int(p) for p in text.split()}
        else:
            pids = set(marked(self.execution_id))
        if self.pgid is not None:
            pids.update(_group_or_session(self.pgid))
        pids.discard(os.getpid())
        return sorted(pids)

    def signal(self, sig: int) -> list[int]:
        """Send sig to every member; the pids that got it."""
        members = self.members()
        if sig == signal.SIGKILL and self.cgroup is not None:
            try:  # all at once, including any forked since members() was read
                (self.cgroup / "cgroup.kill").write_text("1")
                _signal_all(members, sig)  # group or session members outside the cgroup
                return members
            except OSError:
                pass
        return _signal_all(members, sig)

    def kill(self) -> list[int]:
        """SIGKILL every member; the pids still alive."""
        return self.signal(signal.SIGKILL)

    def release(self, budget_s: float = 5.0) -> bool:
        """Kill what is left, remove the cgroup and the record; False if members outlived it."""
        deadline = time.monotonic() + budget_s
        while True:
            left = len(self.kill()) if self.members() else 0
            if not left:
                break
            if time.monotonic() > deadline:
                log.warning("script run %s: %d processes outlived %g s of SIGKILL",
                            self.execution_id, left, budget_s)
                return False
            time.sleep(0.02)
        if self.cgroup is not None:
            for _ in range(50):
                try:
                    self.cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # the last members are still being torn down
                    time.sleep(0.02)
        if self.record is not None:
            self.record.unlink(missing_ok=True)
        return True

    def _write_record(self) -> None:
        if self.record is None:
            return
        data = {"execution_id": self.execution_id, "pgid": self.pgid,
                "cgroup": str(self.cgroup) if self.cgroup else None}
        tmp = self.record.with_suffix(".tmp")
        try:
            with _writing(self.storage, self.record.parent):
                self.record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as f:
                    json.dump(data, f)
                tmp.rename(self.record)
        except OSError as exc:
            tmp.unlink(missing_ok=True)  # a full disk leaves no half record behind
            log.warning("script run %s: cannot write its record: %s", self.execution_id, exc)


def _writing(storage: StorageHealth | None, directory: Path) -> AbstractContextManager[Any]:
    """A write of the run records (booked in storage health when there is one)."""
    return storage.writing(RECORDS, directory) if storage is not None else nullcontext()


class Containment:
    """Makes a RunBox per run and ends the leftovers of a previous gateway."""

    def __init__(self, records_dir: Path | None, use_cgroup: bool = True,
                 storage: StorageHealth | None = None) -> None:
        self.records_dir = records_dir
        self.storage = storage
        self.cgroup_root = cgroup2_root() if use_cgroup else None
        if records_dir is not None:
            try:  # a full or read-only disk at start: runs work, /health names the store
                with _writing(storage, records_dir):
                    records_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:  # runs are recorded once it can be created
                log_write_failure(log, "script runs: cannot create %s", str(records_dir), exc)

    @property
    def kind(self) -> str:
        """cgroup or process-tree (what holds a run together here)."""
        return "cgroup" if self.cgroup_root is not None else "process-tree"

    def box(self, execution_id: str) -> RunBox:
        """A new run's box (its cgroup created)."""
        cgroup = None
        if self.cgroup_root is not None:
            cgroup = self.cgroup_root / CGROUP_PARENT / execution_id
            try:
                cgroup.mkdir(mode=0o755)
            except OSError as exc:
                log.warning("script run %s: no cgroup (%s); tracking its processes instead",
                            execution_id, exc)
                cgroup = None
        record = self.records_dir / f"{execution_id}.json" if self.records_dir else None
        return RunBox(execution_id, cgroup, record, storage=self.storage)

    def end_leftovers(self) -> list[str]:
        """End the runs recorded by a previous gateway process; their execution ids."""
        if self.records_dir is None:
            return []
        ended = []
        for path in sorted(self.records_dir.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                eid = str(data["execution_id"])
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)
                continue
            cgroup = Path(data["cgroup"]) if data.get("cgroup") else None
            box = RunBox(eid, cgroup if cgroup and cgroup.is_dir() else None, path)
            # The old leader's pid may be reused by now: only the cgroup and the marker count.
            alive = box.members() if box.cgroup is not None else marked(eid)
            if alive:
                ended.append(eid)
                log.warning("script run %s of a previous gateway was still running "
                            "(%d processes): ended", eid, len(alive))
            box.release()
        return ended
