"""The event loop lag monitor sees a blocked loop and a late wakeup, and adds no timer."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from gateway.process.looplag import LoopLag, lag_quantile


def test_a_blocking_call_shows_as_lag() -> None:
    async def scenario() -> tuple[dict[str, Any], int]:
        lag = LoopLag()
        lag.start()
        await asyncio.sleep(0.1)
        time.sleep(0.15)  # the loop is stuck here: anything due now waits
        await asyncio.sleep(0.1)
        timers = len(asyncio.get_running_loop()._scheduled)  # type: ignore[attr-defined]
        health = lag.health()
        await lag.stop()
        return health, timers

    health, timers = asyncio.run(scenario())
    assert health["max_ms"] >= 100 and health["max_since_start_ms"] >= 100
    assert health["p99_ms"] >= 100  # 150 ms busy in a window of about 0.35 s
    assert health["p50_ms"] < health["max_ms"]
    assert timers == 0  # measuring costs the loop no wakeup of its own


def test_stop_gives_the_selector_its_own_select_back() -> None:
    async def scenario() -> bool:
        loop = asyncio.get_running_loop()
        selector = loop._selector  # type: ignore[attr-defined]
        lag = LoopLag()
        lag.start()
        wrapped = "select" in vars(selector)
        await lag.stop()
        await asyncio.sleep(0.01)
        return wrapped and "select" not in vars(selector)

    assert asyncio.run(scenario())


class _LateSelector:
    """Returns `late` seconds after a timeout expires, like a thread that waited for a core."""

    def __init__(self, late: float) -> None:
        self.late = late

    def select(self, timeout: float | None = None) -> list[Any]:
        time.sleep((timeout or 0.0) + self.late)
        return []


def test_a_late_wakeup_counts_from_the_timer_due_time() -> None:
    selector = _LateSelector(0.05)
    lag = LoopLag()
    lag.attach(selector)
    selector.select(0.01)  # due after 10 ms, back after 60 ms
    selector.select(0.0)  # the next wait ends the stretch that began at the due time
    assert lag.health()["max_ms"] >= 45


def test_an_early_return_is_no_lag() -> None:
    selector = _LateSelector(0.0)
    lag = LoopLag()
    lag.attach(selector)
    selector.select(0.02)
    selector.select(0.0)
    assert lag.health()["max_ms"] < 15  # only the wait's ms rounding and the sleep's slack


def test_quantiles_weigh_stretches_by_time() -> None:
    # One 100 ms stretch in 1 s: 1% of the time lies more than 90 ms before its end.
    assert lag_quantile([0.1], 1.0, 0.99) == pytest.approx(0.09)
    assert lag_quantile([0.1], 1.0, 0.5) == 0.0  # busy 10% of the time: the median waits 0
    assert lag_quantile([0.1], 1.0, 1.0) == pytest.approx(0.1)
    # Two 50 ms and one 20 ms stretch: above 40 ms lie 10 + 10 ms of the second.
    assert lag_quantile([0.05, 0.02, 0.05], 1.0, 0.98) == pytest.approx(0.04)
    # A loop busy most of the time: the median timer waits too.
    assert lag_quantile([0.01] * 80, 1.0, 0.5) == pytest.approx(0.01 * 3 / 8)
    assert lag_quantile([], 1.0, 0.99) == 0.0
