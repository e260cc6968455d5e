"""Script runs with descendants that outlive the script, hold its pipes or leave its session:
every run ends on exit, stop, kill and timeout, and takes all of them with it. Each case runs
with a cgroup per run (where this machine allows one) and with the process-tree fallback."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from gateway.scripts.containment import Containment, cgroup2_root, marked
from gateway.scripts.runner import (
    COMPLETED,
    FORCED,
    STOP,
    TERMINATED,
    Execution,
    Runner,
)
from tests.scripts.test_script_runner import until

# A child that keeps the output pipe open, in the script's group, then the script exits.
BACKGROUND = "sleep 1000 &\necho child=$!\nexit 0\n"
# A child in a session of its own (no group, no session in common with the script). The
# script exits once the child runs sleep (setsid has made its session by then): before that,
# the script's own group ends it, and it does not count as a descendant left behind.
SETSID = ("setsid sleep 1000 &\necho child=$!\n"
          "while [ \"$(cat /proc/$!/comm 2>/dev/null)\" != sleep ]; do :; done\nexit 0\n")
# Ignores SIGTERM, leaves a setsid child holding the pipes, and hangs.
STUBBORN = ("trap 'echo got TERM' TERM\nsetsid sleep 1000 &\necho child=$!\n"
            "while true; do sleep 0.1; done\n")

KINDS = ["cgroup", "process-tree"]


def containment(kind: str, tmp: Path) -> Containment:
    if kind == "cgroup" and cgroup2_root() is None:
        pytest.skip("no writable cgroup2 here")
    c = Containment(tmp / "runs", use_cgroup=kind == "cgroup")
    assert c.kind == kind
    return c


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def child_pid(ex: Execution) -> int:
    m = re.search(rb"child=(\d+)", bytes(ex.stdout))
    assert m, ex.stdout
    return int(m.group(1))


def run(coro: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return asyncio.run(coro())


async def start(r: Runner, text: str, timeout_s: float = 60) -> Execution:
    ex = await r.start("s", "apps", "a", ["sh", "-c", text], dict(os.environ), timeout_s)
    await until(lambda: b"child=" in ex.stdout or not ex.active)
    return ex


async def ended(ex: Execution, child: int, budget: float = 15.0) -> None:
    """The run is over and nothing of it is left, within budget seconds."""
    await until(lambda: not ex.active, budget=budget)
    await until(lambda: not alive(child), budget=5.0)
    assert marked(ex.id) == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("script", [BACKGROUND, SETSID], ids=["background", "setsid"])
def test_exit_ends_the_run_and_its_descendants(kind: str, script: str, tmp_path: Path) -> None:
    async def scenario() -> Execution:
        r = Runner(5, 100, 1 << 20, containment(kind, tmp_path))
        ex = await start(r, script)
        child = child_pid(ex)
        await ended(ex, child)  # not at the timeout (60 s): when the script exits
        return ex

    ex = run(scenario)
    assert ex.status == COMPLETED and ex.exit_code == 0
    vendor = ex.body("x-vendor")["x-vendor"]
    assert vendor["ended_by"] == "exit" and vendor["descendants_killed"] >= 1
    assert list((tmp_path / "runs").iterdir()) == []  # the run record is gone


@pytest.mark.parametrize("kind", KINDS)
def test_stop_ends_a_run_that_ignores_it(kind: str, tmp_path: Path) -> None:
    async def scenario() -> Execution:
        r = Runner(5, 100, 1 << 20, containment(kind, tmp_path), stop_grace_s=1.0)
        ex = await start(r, STUBBORN)
        child = child_pid(ex)
        r.stop(ex, STOP)
        await until(lambda: b"got TERM" in ex.stdout)
        await ended(ex, child)  # SIGKILL after the grace
        return ex

    ex = run(scenario)
    assert ex.status == TERMINATED and ex.body("x-vendor")["x-vendor"]["ended_by"] == "stop"


@pytest.mark.parametrize("kind", KINDS)
def test_forced_termination_ends_every_descendant(kind: str, tmp_path: Path) -> None:
    async def scenario() -> Execution:
        r = Runner(5, 100, 1 << 20, containment(kind, tmp_path))
        ex = await start(r, STUBBORN)
        child = child_pid(ex)
        r.stop(ex, FORCED)
        await ended(ex, child, budget=5.0)
        return ex

    ex = run(scenario)
    assert ex.status == TERMINATED and ex.exit_code == -9
    assert ex.body("x-vendor")["x-vendor"]["ended_by"] == "forced_termination"


@pytest.mark.parametrize("kind", KINDS)
def test_timeout_ends_every_descendant(kind: str, tmp_path: Path) -> None:
    async def scenario() -> Execution:
        r = Runner(5, 100, 1 << 20, containment(kind, tmp_path))
        ex = await start(r, STUBBORN, timeout_s=1.0)
        await ended(ex, child_pid(ex))
        return ex

    ex = run(scenario)
    assert ex.status == TERMINATED and ex.error is not None
    assert ex.error["error_code"] == "script-timeout"
    assert ex.body("x-vendor")["x-vendor"]["ended_by"] == "timeout"


@pytest.mark.parametrize("kind", KINDS)
def test_six_runs_with_pipe_holders_never_reach_the_cap(kind: str, tmp_path: Path) -> None:
    async def scenario() -> list[Execution]:
        r = Runner(5, 100, 1 << 20, containment(kind, tmp_path))
        runs = []
        for _ in range(6):
            ex = await start(r, BACKGROUND)  # CapacityReached would raise here
            await ended(ex, child_pid(ex))
            runs.append(ex)
        assert r.running() == 0
        return runs

    assert all(ex.status == COMPLETED for ex in run(scenario))


def test_close_ends_every_run(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        r = Runner(5, 100, 1 << 20, Containment(tmp_path / "runs"))
        children = [child_pid(await start(r, STUBBORN)) for _ in range(2)]
        await r.close()
        return children

    for child in run(scenario):
        assert not alive(child)
    assert list((tmp_path / "runs").iterdir()) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_gateway_ends_the_runs_a_killed_one_left(kind: str, tmp_path: Path) -> None:
    import subprocess

    old = containment(kind, tmp_path)
    box = old.box("exec_previous_1")
    env = dict(os.environ, DIAG_EXECUTION_ID="exec_previous_1")
    leader = subprocess.Popen(box.wrap(["sh", "-c", STUBBORN]), env=env, start_new_session=True,
                              stdout=subprocess.PIPE)
    box.started(leader.pid)
    assert leader.stdout is not None
    child = int(leader.stdout.readline().decode().split("=")[1])
    # the gateway dies here: nobody ends the run; a new one reads the record
    assert alive(child) and len(list((tmp_path / "runs").glob("*.json"))) == 1
    ended = containment(kind, tmp_path).end_leftovers()
    assert ended == ["exec_previous_1"]
    leader.wait(10)
    leader.stdout.close()
    run(lambda: until(lambda: not alive(child), budget=5.0))
    assert list((tmp_path / "runs").iterdir()) == []
    assert box.cgroup is None or not box.cgroup.exists()
