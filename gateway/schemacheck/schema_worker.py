"""Validation against client schemas in worker processes that are killed at their budget.

A schema without any regex can still take exponential time: nested `$ref` under `allOf` or
`anyOf` double the work at each level, and a long array multiplies it again. A thread cannot be
stopped, so a budget on a thread pool only stops the waiting: the threads ran on, filled the
pool (every later validation then timed out) and held the process at exit until its hard-exit
timer. Here each validation runs in one of at most MAX_WORKERS child processes
(`_schema_child.py`, JSON lines on stdin and stdout), started on first use and kept up to
WORKER_IDLE_S idle. Past its budget a worker is killed (SIGKILL) and the next validation starts
a fresh one. A worker is bounded in memory (RLIMIT_AS), dies with the gateway
(PR_SET_PDEATHSIG, and end of input), and is killed at stop (close()).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from typing import Any

from ..process.waits import within

log = logging.getLogger(__name__)

MAX_WORKERS = 2  # validations at once; more wait for a worker (within their budget)
WORKER_MEMORY_MIB = 512  # address space of one worker (the interpreter alone takes ~40)
WORKER_IDLE_S = 60.0  # an idle worker (~30 MiB) ends after this
START_TIMEOUT_S = 30.0  # a worker's start (interpreter and imports), not counted in the budget
ANSWER_LIMIT_BYTES = 16 << 20  # one answer line (problems are capped in count and length)
_CHILD = "gateway.schemacheck._schema_child"
_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
         f"from {_CHILD} import main; main(sys.argv[2:])")


class _Gone(Exception):
    """The worker ended (killed, crashed, out of memory) before it answered."""


class _Unreachable(_Gone):
    """The worker had ended before it was asked (its input is closed)."""


def budget_problem(timeout_s: float) -> str:
    """The problem reported for a validation stopped at its budget."""
    return (f"(schema): validation took longer than {timeout_s:g} s (the validation budget) and "
            "was stopped; simplify the schema (nested $ref, allOf/anyOf/oneOf, patterns) or "
            "send smaller parameters")


def busy_problem(timeout_s: float) -> str:
    """The problem reported when no worker came free within the budget."""
    return (f"(schema): validation could not start within {timeout_s:g} s (the validation "
            f"budget): all {MAX_WORKERS} validation workers are busy with other requests; "
            "retry later")


def gone_problem() -> str:
    """The problem reported when a worker ended mid-validation."""
    return (f"(schema): the validation worker ended before it answered (killed, or over its "
            f"{WORKER_MEMORY_MIB} MiB memory limit); simplify the schema or the parameters, "
            "or retry")


class _Worker:
    """One validation process and its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.idle_timer: asyncio.TimerHandle | None = None

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self.proc.pid

    async def ask(self, request: bytes) -> dict[str, Any]:
        """Send one request line, read one answer line; _Gone when the worker ended."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(request)
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise _Unreachable from None
        return await self.answer()

    async def answer(self) -> dict[str, Any]:
        """The next answer line, parsed; _Gone at end of output or on a broken line."""
        assert self.proc.stdout is not None
        try:
            line = await self.proc.stdout.readline()
            answer = json.loads(line) if line.endswith(b"\n") else None
        except ValueError:  # past ANSWER_LIMIT_BYTES, or not JSON
            answer = None
        if not isinstance(answer, dict):
            raise _Gone
        return answer

    def kill(self) -> None:
        """SIGKILL, unless it has already ended."""
        if self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass


class _Pool:
    """At most MAX_WORKERS workers of one event loop: idle ones kept, busy ones tracked."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.slots = asyncio.Semaphore(MAX_WORKERS)
        self.idle: list[_Worker] = []
        self.busy: set[_Worker] = set()
        self.reaping: set[asyncio.Task[Any]] = set()
        self.closed = False

    async def validate(self, request: bytes, timeout_s: float) -> list[str]:
        """Problems a worker finds, or the one problem saying why it did not answer."""
        try:
            await within(self.slots.acquire(), timeout_s)
        except asyncio.TimeoutError:
            return [busy_problem(timeout_s)]
        try:
            return await self._run(request, timeout_s)
        finally:
            self.slots.release()

    async def _run(self, request: bytes, timeout_s: float) -> list[str]:
        while not self.closed:
            while self.idle and self.idle[-1].proc.returncode is not None:
                self.idle.pop()  # ended while idle (and reaped)
            reused = bool(self.idle)
            if reused:
                worker = self.idle.pop()
                if worker.idle_timer is not None:
                    worker.idle_timer.cancel()
            else:
                try:
                    worker = await within(self._start(), START_TIMEOUT_S)
                except (asyncio.TimeoutError, OSError, _Gone) as exc:
                    log.warning("a schema validation worker did not start: %r", exc)
                    return ["(schema): the validation worker did not start; retry later"]
            self.busy.add(worker)
            try:
                answer = await within(worker.ask(request), timeout_s)
            except asyncio.TimeoutError:
                self._kill(worker)
                log.info("schema validation stopped at its %g s budget (worker %d killed)",
                         timeout_s, worker.pid)
                return [budget_problem(timeout_s)]
            except _Gone as exc:
                self._kill(worker)
                if reused and isinstance(exc, _Unreachable):
                    continue  # it had ended while idle: a fresh one takes the request
                return [gone_problem()]
            except BaseException:  # cancelled: the caller went away, or the gateway stops
                self._kill(worker)
                raise
            finally:
                self.busy.discard(worker)
            problems = answer.get("problems")
            if answer.get("retire") or not isinstance(problems, list):
                self._kill(worker)
            else:
                self.idle.append(worker)
                worker.idle_timer = self.loop.call_later(WORKER_IDLE_S, self._end_idle, worker)
            if not isinstance(problems, list):
                return [gone_problem()]
            return [str(p) for p in problems]
        return ["(schema): validation was stopped: the gateway is stopping"]

    async def _start(self) -> _Worker:
        path = [p or os.getcwd() for p in sys.path]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-c", _BOOT, json.dumps(path), str(os.getpid()),
            str(WORKER_MEMORY_MIB << 20), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env={"PATH": os.defpath}, limit=ANSWER_LIMIT_BYTES)
        worker = _Worker(proc)
        try:
            ready = await worker.answer()  # once imported: the budget counts validation only
        except BaseException:
            self._kill(worker)
            raise
        if not ready.get("ready"):
            self._kill(worker)
            raise _Gone
        return worker

    def _end_idle(self, worker: _Worker) -> None:
        if worker in self.idle:
            self.idle.remove(worker)
            self._kill(worker)

    def _kill(self, worker: _Worker) -> None:
        if worker.idle_timer is not None:
            worker.idle_timer.cancel()
        worker.kill()
        task = self.loop.create_task(worker.proc.wait())  # reaped, pipes closed
        self.reaping.add(task)
        task.add_done_callback(self.reaping.discard)

    def pids(self) -> list[int]:
        """Process ids of the live workers, busy ones first."""
        return [w.pid for w in [*self.busy, *self.idle] if w.proc.returncode is None]

    async def close(self) -> None:
        """Kill every worker and wait until they are reaped."""
        self.closed = True
        for worker in [*self.busy, *self.idle]:
            self._kill(worker)
        self.idle.clear()
        if self.reaping:
            await asyncio.wait(set(self.reaping), timeout=5.0)

    def abandon(self) -> None:
        """Kill the workers of a loop that is gone (their pipes can no longer be used)."""
        self.closed = True
        for worker in [*self.busy, *self.idle]:
            if worker.idle_timer is not None:
                worker.idle_timer.cancel()
            _kill_child(worker.pid)
        self.busy.clear()
        self.idle.clear()


def _kill_child(pid: int) -> None:
    """SIGKILL and reap pid if it is still an unreaped child (so never a reused pid)."""
    try:
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return  # it had ended: now reaped
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped already (by the loop's child watcher)
        pass


_POOL: _Pool | None = None


def _pool() -> _Pool:
    global _POOL
    loop = asyncio.get_running_loop()
    if _POOL is None or _POOL.loop is not loop:
        if _POOL is not None:
            _POOL.abandon()
        _POOL = _Pool()
    return _POOL


async def validate(schema: dict[str, Any], instance: Any, timeout_s: float) -> list[str]:
    """Problems of a bounded instance against schema, found in a worker process within
    timeout_s; past it the worker is killed and the one problem names the budget."""
    request = json.dumps({"schema": schema, "instance": instance}).encode() + b"\n"
    return await _pool().validate(request, timeout_s)


def worker_pids() -> list[int]:
    """Process ids of the live validation workers (busy ones first)."""
    return _POOL.pids() if _POOL is not None else []


async def close() -> None:
    """Kill the validation workers (at the gateway's stop); later validations start new ones."""
    global _POOL
    pool, _POOL = _POOL, None
    if pool is not None and pool.loop is asyncio.get_running_loop():
        await pool.close()
    elif pool is not None:
        pool.abandon()
