"""On uvloop (no selector to time), the lag monitor samples the loop with a probe timer
that backs off while the loop is idle and comes back to its short period once it is busy."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from gateway.process import loopprobe
from gateway.process.looplag import LoopLag
from gateway.process.loopprobe import LoopProbe

uvloop = pytest.importorskip("uvloop")


def _on_uvloop(scenario: Any) -> Any:
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(scenario())


async def _until(check: Any, budget_s: float, what: str) -> None:
    deadline = time.monotonic() + budget_s
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


def test_a_blocking_call_shows_as_lag_on_uvloop() -> None:
    async def scenario() -> dict[str, Any]:
        lag = LoopLag()
        lag.start()
        await asyncio.sleep(0.1)
        time.sleep(0.15)  # the loop is stuck here: the probe due meanwhile waits
        await asyncio.sleep(0.1)
        health = lag.health()
        await lag.stop()
        return health

    health = _on_uvloop(scenario)
    assert health["loop"] == "uvloop" and health["measured_by"] == "probe"
    assert health["max_ms"] >= 80 and health["max_since_start_ms"] >= 80
    assert health["p99_ms"] >= 80
    assert health["p50_ms"] < health["max_ms"]


def test_the_selector_loop_is_timed_around_its_selector() -> None:
    async def scenario() -> dict[str, Any]:
        lag = LoopLag()
        lag.start()
        health = lag.health()
        await lag.stop()
        return health

    health = asyncio.run(scenario())
    assert health["loop"] == "asyncio" and health["measured_by"] == "selector"


def test_the_probe_backs_off_while_idle_and_returns_when_busy() -> None:
    async def scenario() -> tuple[float, float, int, bool]:
        probe = LoopProbe()
        probe.start()
        await _until(lambda: probe.interval >= loopprobe.IDLE_S / 2, 30, "backed off")
        idle_interval = probe.interval
        idle_samples = len(probe.samples)
        end = time.monotonic() + 30
        while probe.interval > loopprobe.PROBE_S and time.monotonic() < end:
            spin = time.perf_counter() + 0.005
            while time.perf_counter() < spin:  # busy: the loop thread works, on time
                pass
            await asyncio.sleep(0)
        busy_interval = probe.interval
        probe.stop()
        handle = probe._handle
        return idle_interval, busy_interval, idle_samples, handle is None

    idle, busy, samples, stopped = _on_uvloop(scenario)
    assert idle >= loopprobe.IDLE_S / 2
    assert samples < 12  # doubling from PROBE_S: a handful of probes to reach the idle period
    assert busy == loopprobe.PROBE_S
    assert stopped


def test_a_stall_without_cpu_is_recorded_and_does_not_speed_the_probe_up() -> None:
    async def scenario() -> tuple[float, float, float]:
        probe = LoopProbe()
        probe.start()
        await _until(lambda: probe.interval >= 0.16, 30, "backed off")
        before = len(probe.samples)
        time.sleep(loopprobe.IDLE_S + 0.2)  # a blocking call: the probe due meanwhile is
        # late (whatever its period), with no CPU used
        await _until(lambda: len(probe.samples) > before, 30, "the late probe")
        late = probe.samples[-1][1]
        probe.stop()
        return late, probe.max_ms, probe.interval

    late, max_ms, interval = _on_uvloop(scenario)
    assert late >= 0.15 and max_ms >= 150  # the stall is in the figures
    assert interval > loopprobe.PROBE_S  # and the probe keeps backing off


def test_an_idle_loop_reports_no_lag() -> None:
    async def scenario() -> dict[str, Any]:
        lag = LoopLag()
        lag.start()
        await asyncio.sleep(0.3)
        health = lag.health()
        await lag.stop()
        return health

    health = _on_uvloop(scenario)
    assert health["max_ms"] < 50  # an idle loop: only the thread's own scheduling delays
