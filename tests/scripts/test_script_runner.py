"""The script runner with real subprocesses: output, failure, stop, kill, timeout, cap, history."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripts.runner import (
    COMPLETED,
    FAILED,
    FORCED,
    RUNNING,
    STOP,
    TERMINATED,
    CapacityReached,
    Execution,
    NotRunning,
    Runner,
)

# A script that ignores SIGTERM, leaves a background child in its group, and hangs.
STUBBORN = ("trap 'echo got TERM' TERM\nsleep 300 &\necho started\n"
            "while true; do sleep 0.1; done\n")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


async def until(predicate: Callable[[], bool], budget: float = 30.0) -> None:
    deadline = time.monotonic() + budget
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def group_empties(pgid: int | None) -> None:
    """Every process of the group dies (the kernel may take a moment on a loaded machine)."""
    assert pgid is not None
    await until(lambda: group_members(pgid) == [], budget=30.0)


def run(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro())


def sh(text: str) -> list[str]:
    return ["sh", "-c", text]


def test_prints_and_fails() -> None:
    async def scenario() -> tuple[Execution, Execution]:
        r = Runner(5, 100, 1 << 20)
        ok = await r.start("s", "apps", "a", sh("echo out; echo err >&2"), dict(os.environ), 30)
        assert ok.status == RUNNING and ok.pid  # started, not waited for
        bad = await r.start("s", "apps", "a", sh("echo no >&2; exit 3"), dict(os.environ), 30)
        await until(lambda: not ok.active and not bad.active)
        return ok, bad

    ok, bad = run(scenario)
    body = ok.body("x-vendor")
    assert body["status"] == COMPLETED and body["progress"] == 100
    assert body["parameters"] == {"stdout": "out\n", "stderr": "err\n", "exit_code": 0}
    assert body["started_at"] <= body["completed_at"] and "error" not in body
    assert bad.status == FAILED and bad.exit_code == 3
    assert bad.error is not None and "code 3" in bad.error["message"]


def test_stop_is_ignored_then_kill_leaves_no_process_in_the_group() -> None:
    async def scenario() -> tuple[Execution, list[int]]:
        r = Runner(5, 100, 1 << 20)
        ex = await r.start("s", "apps", "a", sh(STUBBORN), dict(os.environ), 60)
        await until(lambda: b"started" in ex.stdout)
        assert ex.pid is not None and len(group_members(ex.pid)) >= 2
        r.stop(ex, STOP)
        await until(lambda: b"got TERM" in ex.stdout)
        assert ex.status == RUNNING  # SIGTERM taken and ignored
        r.stop(ex, FORCED)
        await until(lambda: not ex.active)
        with pytest.raises(NotRunning):
            r.stop(ex, STOP)
        await group_empties(ex.pid)  # the background child dies with the group
        return ex

    ex = run(scenario)
    assert ex.status == TERMINATED and ex.exit_code == -9
    assert ex.error is not None and "forced_termination" in ex.error["message"]


def test_timeout_kills_the_group() -> None:
    async def scenario() -> Execution:
        r = Runner(5, 100, 1 << 20)
        ex = await r.start("s", "apps", "a", sh(STUBBORN), dict(os.environ), 0.5)
        await until(lambda: not ex.active)
        await group_empties(ex.pid)
        return ex

    ex = run(scenario)
    assert ex.status == TERMINATED and ex.error is not None
    assert ex.error["error_code"] == "script-timeout"


def test_concurrency_cap_and_history_eviction() -> None:
    async def scenario() -> None:
        r = Runner(2, 3, 1 << 20)
        env = dict(os.environ)
        a = await r.start("s", "apps", "a", sh("sleep 300"), env, 60)
        b = await r.start("s", "apps", "a", sh("sleep 300"), env, 60)
        with pytest.raises(CapacityReached):
            await r.start("s", "apps", "a", sh("true"), env, 60)
        r.stop(a, FORCED)
        await until(lambda: not a.active)
        c = await r.start("s", "apps", "a", sh("true"), env, 60)
        await until(lambda: not c.active)
        d = await r.start("s", "apps", "a", sh("true"), env, 60)
        await until(lambda: not d.active)
        # four records, cap three: the oldest finished one (a) went; running b stays
        assert list(r.executions) == [b.id, c.id, d.id]
        with pytest.raises(NotRunning):
            r.delete(b)
        r.delete(c)
        assert c.id not in r.executions
        await r.close()
        assert b.status == TERMINATED
        await group_empties(b.pid)

    run(scenario)


def test_output_is_capped() -> None:
    async def scenario() -> Execution:
        r = Runner(1, 10, 1024)
        ex = await r.start("s", "apps", "a", sh("head -c 5000 /dev/zero"), dict(os.environ), 30)
        await until(lambda: not ex.active)
        return ex

    ex = run(scenario)
    assert len(ex.stdout) == 1024
    assert ex.body("x-vendor")["x-vendor"]["output_bytes_dropped"] == {"stdout": 5000 - 1024}
