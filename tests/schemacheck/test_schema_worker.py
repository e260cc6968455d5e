"""Validation in worker processes: killed at the budget, replaced, bounded, gone with the gateway."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gateway.schemacheck import safeschema, schema_worker
from gateway.schemacheck.safeschema import SchemaRefused, check, problems_off_loop
from gateway.scripts.catalog import ScriptError, managed_from
from tests.harness import ROOT, wait_until

T = TypeVar("T")
INT = {"type": "integer"}
WRONG = ["(root): 'x' is not of type 'integer'"]


def doubling(levels: int, keyword: str = "anyOf") -> dict[str, Any]:
    """No regex at all: each level applies the next one twice, so the work doubles per level."""
    defs: dict[str, Any] = {f"d{n}": {keyword: [{"$ref": f"#/$defs/d{n + 1}"}] * 2}
                            for n in range(levels)}
    defs[f"d{levels}"] = INT
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def alive(pid: int) -> bool:
    """Whether pid is a process that has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    """Run a scenario on a fresh loop; its validation workers are killed at the end."""
    async def main() -> T:
        try:
            return await scenario()
        finally:
            await schema_worker.close()

    return asyncio.run(main())


def test_a_schema_that_doubles_per_level_is_refused_at_check() -> None:
    with pytest.raises(SchemaRefused, match=f"more than {safeschema.MAX_EXPANSION} subschemas"):
        check(doubling(30))
    with pytest.raises(SchemaRefused, match="subschemas"):
        check(doubling(30, "allOf"))
    assert check(doubling(6)) and safeschema.expansion(doubling(6)) < 1000
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    assert check(tree) is tree  # a recursive schema recurses with the value: bounded by it


def test_problems_are_capped_in_count_and_length() -> None:
    many = safeschema.problems({"type": "array", "items": INT}, ["x"] * 300)
    assert len(many) == safeschema.MAX_PROBLEMS + 1 and many[-1] == "(and 200 more problems)"
    assert many[:2] == ["0: 'x' is not of type 'integer'", "1: 'x' is not of type 'integer'"]
    long = safeschema.problems(INT, "y" * 5000)
    assert len(long[0]) == safeschema.MAX_PROBLEM_CHARS and long[0].endswith("...")


def test_sidecars_and_manifest_entries_refuse_it_too(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="more than 10000 subschemas"):
        managed_from({"parameters_schema": doubling(30)}, tmp_path / "a.sh", "a")


def test_the_budget_ends_the_work_and_the_pool_is_not_poisoned() -> None:
    async def scenario() -> tuple[list[str], float, list[list[str]], list[int], list[int]]:
        assert await problems_off_loop(INT, "x", timeout_s=60) == WRONG  # workers started
        slow_pids: list[int] = []

        async def slow() -> list[str]:
            task = asyncio.ensure_future(problems_off_loop(doubling(30), "x", timeout_s=1.0))
            await asyncio.sleep(0.3)
            slow_pids.extend(schema_worker.worker_pids())
            return await task

        t0 = time.monotonic()
        stopped = await asyncio.gather(slow(), slow())  # both workers busy with a slow one
        took = time.monotonic() - t0
        after = [await problems_off_loop(INT, v, timeout_s=60) for v in ("x", 3, "y")]
        return stopped[0] + stopped[1], took, after, slow_pids, schema_worker.worker_pids()

    stopped, took, after, slow_pids, now = run(scenario)
    assert len(stopped) == 2 and all("took longer than 1 s (the validation budget)" in p
                                      for p in stopped), stopped
    assert took < 20  # the budget (1 s) and some slack on a busy machine, not the hours
    assert after == [WRONG, [], ["(root): 'y' is not of type 'integer'"]]
    assert slow_pids and not set(slow_pids) & set(now)
    wait_until(lambda: not any(alive(p) for p in slow_pids), 10, "killed workers gone")


def test_a_worker_killed_mid_validation_is_replaced() -> None:
    async def scenario() -> tuple[list[str], int, list[str], list[int]]:
        task = asyncio.ensure_future(problems_off_loop(doubling(30), "x", timeout_s=120))
        for _ in range(600):
            if schema_worker.worker_pids():
                break
            await asyncio.sleep(0.05)
        pid = schema_worker.worker_pids()[0]
        await asyncio.sleep(0.2)  # validating now
        os.kill(pid, signal.SIGKILL)
        cut = await asyncio.wait_for(task, 60)
        return cut, pid, await problems_off_loop(INT, "x", timeout_s=60), \
            schema_worker.worker_pids()

    cut, pid, after, now = run(scenario)
    assert len(cut) == 1 and "worker ended before it answered" in cut[0], cut
    assert after == WRONG and now and pid not in now


def test_an_idle_worker_that_died_is_replaced_unnoticed() -> None:
    async def scenario() -> tuple[int, list[str], list[int]]:
        assert await problems_off_loop(INT, "x", timeout_s=60) == WRONG
        pid = schema_worker.worker_pids()[0]
        os.kill(pid, signal.SIGKILL)
        for _ in range(200):
            if not alive(pid):
                break
            await asyncio.sleep(0.05)
        return pid, await problems_off_loop(INT, 7, timeout_s=60), schema_worker.worker_pids()

    pid, after, now = run(scenario)
    assert after == [] and now and pid not in now


def test_a_worker_over_its_memory_limit_answers_and_is_replaced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_worker, "WORKER_MEMORY_MIB", 96)

    async def scenario() -> tuple[list[str], list[str]]:
        # a failed anyOf keeps the errors of both branches: they double per level too
        over = await problems_off_loop(doubling(30), "x", timeout_s=120)
        return over, await problems_off_loop(INT, "x", timeout_s=60)

    over, after = run(scenario)
    assert len(over) == 1 and "96 MiB" in over[0], over
    assert after == WRONG


def test_idle_workers_end_and_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_worker, "WORKER_IDLE_S", 0.3)

    async def scenario() -> tuple[list[int], list[int], list[str]]:
        assert await problems_off_loop(INT, "x", timeout_s=60) == WRONG
        first = schema_worker.worker_pids()
        await asyncio.sleep(1.0)
        return first, schema_worker.worker_pids(), await problems_off_loop(INT, 1, timeout_s=60)

    first, idle, after = run(scenario)
    assert first and idle == [] and after == []
    wait_until(lambda: not any(alive(p) for p in first), 10, "the idle worker gone")


def test_close_kills_the_workers() -> None:
    async def scenario() -> list[int]:
        await asyncio.gather(*(problems_off_loop(INT, n, timeout_s=60) for n in range(4)))
        pids = schema_worker.worker_pids()
        await schema_worker.close()
        return pids

    pids = run(scenario)
    assert 1 <= len(pids) <= schema_worker.MAX_WORKERS
    wait_until(lambda: not any(alive(p) for p in pids), 10, "workers gone after close()")


_ORPHAN = """
import asyncio, sys
from gateway.schemacheck import schema_worker
from gateway.schemacheck.safeschema import problems_off_loop
from tests.schemacheck.test_schema_worker import doubling

async def main():
    task = asyncio.ensure_future(problems_off_loop(doubling(30), "x", timeout_s=600))
    while not schema_worker.worker_pids():
        await asyncio.sleep(0.05)
    print(schema_worker.worker_pids()[0], flush=True)
    await task

asyncio.run(main())
"""


def test_a_busy_worker_dies_with_its_gateway() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        time.sleep(0.3)
        assert alive(pid)
    finally:
        proc.kill()  # SIGKILL: no cleanup of its own runs
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
    wait_until(lambda: not alive(pid), 10, "the worker gone with the process that started it")
