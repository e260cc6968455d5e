"""Script executions: contained subprocesses (gateway/scripts/containment.py), output capture,
stop, kill, timeout, a concurrency cap and a bounded history. A run ends when its leader exits,
is stopped, killed or times out, and every descendant ends with it, whoever holds its pipes.
The event loop never waits on a script."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.runids import new_id
from ..model.timestamps import iso
from ..process.waits import wait_event
from .containment import MARKER, Containment, RunBox

log = logging.getLogger(__name__)

PREPARED, RUNNING, COMPLETED, FAILED, TERMINATED = (
    "prepared", "running", "completed", "failed", "terminated")
ACTIVE = frozenset({PREPARED, RUNNING})
STOP, FORCED = "stop", "forced_termination"
_CHUNK = 65536
_DRAIN_S = 2.0  # how long output pipes may stay open after the run was killed
_REAP_S = 10.0  # how long a close waits for a killed script to be reaped (loaded machine)
_POLL_S = 0.2  # leader exit check where pidfd_open is not available
STOP_GRACE_S = 5.0  # a stop (SIGTERM) not obeyed by then becomes a SIGKILL of the whole run


class CapacityReached(Exception):
    """The concurrency cap is reached."""


class NotRunning(Exception):
    """The execution has already finished."""


def _iso(ns: int) -> str:
    return iso(ns)


@dataclass
class Execution:
    """One run of a script on an entity."""

    id: str
    script_id: str
    kind: str
    entity_id: str
    timeout_s: float
    status: str = PREPARED
    created_ns: int = field(default_factory=time.time_ns)
    started_ns: int | None = None
    completed_ns: int | None = None
    pid: int | None = None
    exit_code: int | None = None
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    dropped: dict[str, int] = field(default_factory=lambda: {"stdout": 0, "stderr": 0})
    requested: str | None = None  # stop, forced_termination, timeout or shutdown
    ended_by: str | None = None  # exit, stop, forced_termination, timeout or shutdown
    leftovers_killed: int = 0  # descendants still alive when the run ended
    error: dict[str, str] | None = None
    task: asyncio.Task[None] | None = None
    box: RunBox | None = None

    @property
    def active(self) -> bool:
        """Prepared or running."""
        return self.status in ACTIVE

    def body(self, xv: str) -> dict[str, Any]:
        """The API body; absent optional fields are omitted."""
        params: dict[str, Any] = {"stdout": self.stdout.decode("utf-8", "replace"),
                                  "stderr": self.stderr.decode("utf-8", "replace")}
        if self.exit_code is not None:
            params["exit_code"] = self.exit_code
        out: dict[str, Any] = {"id": self.id, "status": self.status,
                               "progress": 0 if self.active else 100}
        if self.started_ns is not None:
            out["started_at"] = _iso(self.started_ns)
        if self.completed_ns is not None:
            out["completed_at"] = _iso(self.completed_ns)
        out["parameters"] = params
        if self.error is not None:
            out["error"] = self.error
        vendor: dict[str, Any] = {"script_id": self.script_id, "entity_id": self.entity_id,
                                  "timeout_sec": self.timeout_s}
        if self.pid is not None:
            vendor["pid"] = self.pid
        if self.ended_by is not None:
            vendor["ended_by"] = self.ended_by
            vendor["descendants_killed"] = self.leftovers_killed
        dropped = {k: v for k, v in self.dropped.items() if v}
        if dropped:
            vendor["output_bytes_dropped"] = dropped
        out[xv] = vendor
        return out


class Runner:
    """Executions by id, oldest first; at most `max_concurrent` prepared or running."""

    def __init__(self, max_concurrent: int, max_history: int, max_output: int,
                 containment: Containment | None = None,
                 stop_grace_s: float = STOP_GRACE_S) -> None:
        self.max_concurrent = max_concurrent
        self.max_history = max_history
        self.max_output = max_output
        self.containment = containment or Containment(None)
        self.stop_grace_s = stop_grace_s
        self.executions: OrderedDict[str, Execution] = OrderedDict()

    def running(self) -> int:
        """Executions prepared or running."""
        return sum(1 for e in self.executions.values() if e.active)

    def evict(self) -> list[str]:
        """Drop the oldest finished records past the history cap; returns their ids."""
        gone: list[str] = []
        excess = len(self.executions) - self.max_history
        if excess <= 0:
            return gone
        for eid, record in list(self.executions.items()):
            if excess <= 0:
                break
            if not record.active:
                del self.executions[eid]
                gone.append(eid)
                excess -= 1
        return gone

    @staticmethod
    def new_id() -> str:
        """A fresh execution id, never reused across restarts."""
        return new_id("exec")

    async def start(self, script_id: str, kind: str, entity_id: str, argv: Sequence[str],
                    env: Mapping[str, str], timeout_s: float, cwd: str | None = None,
                    execution_id: str | None = None) -> Execution:
        """Spawn a contained run (its own session, cgroup where available) once started."""
        if self.running() >= self.max_concurrent:
            raise CapacityReached(f"{self.max_concurrent} script executions are already "
                                  "running; wait for one to finish or stop one")
        record = Execution(execution_id or self.new_id(), script_id, kind, entity_id, timeout_s)
        self.executions[record.id] = record
        loop = asyncio.get_running_loop()
        box = await loop.run_in_executor(None, self.containment.box, record.id)
        record.box = box
        child_env = dict(env)
        child_env[MARKER] = record.id  # every descendant inherits it (process-tree fallback)
        try:
            proc = await asyncio.create_subprocess_exec(
                *box.wrap(list(argv)), stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env,
                cwd=cwd, start_new_session=True)
        except OSError as exc:
            record.status, record.completed_ns = FAILED, time.time_ns()
            record.ended_by = "exit"
            record.error = {"error_code": "script-failed",
                            "message": f"cannot start {argv[0]}: {exc.strerror or exc}"}
            await loop.run_in_executor(None, box.release)
            self.evict()
            return record
        record.pid, record.status, record.started_ns = proc.pid, RUNNING, time.time_ns()
        box.started(proc.pid)
        if record.requested is not None:  # stopped while it was being spawned
            box.kill()
        record.task = loop.create_task(self._watch(record, proc, box))
        self.evict()
        return record

    async def _pump(self, stream: asyncio.StreamReader | None, record: Execution,
                    name: str) -> None:
        if stream is None:
            return
        buf: bytearray = getattr(record, name)
        while chunk := await stream.read(_CHUNK):
            room = self.max_output - len(buf)
            if room > 0:
                buf.extend(chunk[:room])
            if len(chunk) > room:
                record.dropped[name] += len(chunk) - max(room, 0)

    @staticmethod
    def _exit_event(pid: int) -> tuple[asyncio.Event, int | None]:
        """An event set when the leader exits (a pidfd reader), and the pidfd."""
        event = asyncio.Event()
        try:
            fd = os.pidfd_open(pid)
        except (OSError, AttributeError):
            return event, None  # gone already, or no pidfd here: polled
        asyncio.get_running_loop().add_reader(fd, event.set)
        return event, fd

    async def _watch(self, record: Execution, proc: asyncio.subprocess.Process,
                     box: RunBox) -> None:
        loop = asyncio.get_running_loop()
        pumps = [asyncio.ensure_future(self._pump(proc.stdout, record, "stdout")),
                 asyncio.ensure_future(self._pump(proc.stderr, record, "stderr"))]
        exited, fd = self._exit_event(proc.pid)
        deadline = loop.time() + record.timeout_s
        try:
            # The leader's exit, not its pipes: a descendant may hold them open for good.
            while proc.returncode is None and not exited.is_set():
                left = deadline - loop.time()
                if left <= 0:
                    record.requested = record.requested or "timeout"
                    break
                await wait_event(exited, left if fd is not None else min(left, _POLL_S))
            await self._end(record, proc, box, pumps)
        except asyncio.CancelledError:
            record.requested = record.requested or FORCED
            with contextlib.suppress(Exception):
                await asyncio.shield(self._end(record, proc, box, pumps))
            self._finish(record, proc.returncode)
            raise
        finally:
            if fd is not None:
                loop.remove_reader(fd)
                os.close(fd)
        self._finish(record, proc.returncode)

    async def _end(self, record: Execution, proc: asyncio.subprocess.Process, box: RunBox,
                   pumps: Sequence[asyncio.Future[None]]) -> None:
        """Kill every process left in the run, reap the leader, drain the pipes, release."""
        loop = asyncio.get_running_loop()
        killed = await loop.run_in_executor(None, box.kill)
        record.leftovers_killed = len([p for p in killed if p != proc.pid])
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), _REAP_S)
        _done, pending = await asyncio.wait(pumps, timeout=_DRAIN_S)
        for p in pending:
            p.cancel()
        await loop.run_in_executor(None, box.release)

    def _finish(self, record: Execution, code: int | None) -> None:
        if not record.active:
            return
        record.exit_code = code
        record.completed_ns = time.time_ns()
        record.ended_by = record.requested or "exit"
        if record.requested == "timeout":
            record.status = TERMINATED
            record.error = {"error_code": "script-timeout",
                            "message": f"ran longer than {record.timeout_s:g} s; killed"}
        elif record.requested is not None:
            record.status = TERMINATED
            record.error = {"error_code": "script-terminated",
                            "message": f"terminated on request ({record.requested})"}
        elif code == 0:
            record.status = COMPLETED
        else:
            record.status = FAILED
            record.error = {"error_code": "script-failed",
                            "message": f"exited with code {code}" if code is not None and
                            code >= 0 else f"killed by signal {-(code or 0)}"}
        self.evict()

    def stop(self, record: Execution, action: str) -> None:
        """SIGTERM (stop; SIGKILL after the grace) or SIGKILL (forced_termination) to every
        process of the run."""
        if not record.active:
            raise NotRunning(f"Execution '{record.id}' is not running (status {record.status})")
        record.requested = action
        if record.box is None:
            return
        if action == FORCED:
            record.box.kill()
            return
        record.box.signal(signal.SIGTERM)
        box = record.box
        asyncio.get_running_loop().call_later(
            self.stop_grace_s, lambda: box.kill() if record.active else None)

    def delete(self, record: Execution) -> None:
        """Forget a finished execution."""
        if record.active:
            raise NotRunning(f"Execution '{record.id}' is still running")
        self.executions.pop(record.id, None)

    async def close(self) -> None:
        """Kill every running group and wait for the watchers."""
        tasks = [e.task for e in self.executions.values() if e.task is not None and e.active]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
