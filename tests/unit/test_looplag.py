"""The event loop lag monitor sees a blocked loop."""

from __future__ import annotations

import asyncio
import time

from gateway.looplag import LoopLag


def test_a_blocking_call_shows_as_lag() -> None:
    async def scenario() -> dict[str, float]:
        lag = LoopLag()
        lag.start()
        await asyncio.sleep(0.1)
        time.sleep(0.15)  # the loop is stuck here: the next timer fires late
        await asyncio.sleep(0.1)
        await lag.stop()
        return lag.health()

    health = asyncio.run(scenario())
    assert health["max_ms"] >= 100 and health["max_since_start_ms"] >= 100
    assert health["p50_ms"] < health["max_ms"]
