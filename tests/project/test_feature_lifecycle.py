"""The feature services' one lifecycle: started in the declared order, stopped in reverse."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.app import FEATURE_SERVICES, make_app
from gateway.auth.enforce import AUTH
from gateway.bulk_data.keys import BULK_DATA
from gateway.faults.keys import FAULT_SERVICE
from gateway.http.lifecycle import run_features, shutdown_features
from gateway.lifecycle.control import LIFECYCLE
from gateway.locks.guard import LOCK_SERVICE
from gateway.push.keys import PUSH_DELIVERY
from gateway.scripts.service import SCRIPT_SERVICE
from gateway.settings.config import load
from gateway.updates.feature import UPDATES


class Recorded:
    """A feature service that notes each call in a shared log."""

    def __init__(self, name: str, log: list[str], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    async def start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.fail:
            raise RuntimeError(self.name)

    async def shutdown(self) -> None:
        self.log.append(f"shutdown {self.name}")

    async def stop(self) -> None:
        self.log.append(f"stop {self.name}")

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        return {f"x-{self.name}": lambda: self.name}


def test_started_in_order_stopped_in_reverse_with_their_health_blocks() -> None:
    log: list[str] = []
    health: dict[str, Callable[[], Any]] = {"x-b": lambda: "registered at build time"}
    services = [Recorded(n, log) for n in ("a", "b", "c")]

    async def run() -> None:
        async with run_features(services, health):
            log.append("serving")
        await shutdown_features(services)

    asyncio.run(run())
    assert log == ["start a", "start b", "start c", "serving", "stop c", "stop b", "stop a",
                   "shutdown a", "shutdown b", "shutdown c"]
    assert list(health) == ["x-b", "x-a", "x-c"]  # a block known earlier keeps its place
    assert health["x-b"]() == "b"


def test_a_failed_start_stops_only_what_started() -> None:
    log: list[str] = []
    services = [Recorded("a", log), Recorded("b", log, fail=True), Recorded("c", log)]

    async def run() -> None:
        async with run_features(services, {}):
            log.append("serving")

    with pytest.raises(RuntimeError, match="b"):
        asyncio.run(run())
    assert log == ["start a", "start b", "stop a"]


def test_make_app_declares_one_order(tmp_path: Path) -> None:
    app = make_app(load(None, [f"state_dir={tmp_path}"]))
    order = [app[key] for key in (BULK_DATA, FAULT_SERVICE, UPDATES, PUSH_DELIVERY,
                                  LOCK_SERVICE, SCRIPT_SERVICE, LIFECYCLE)]
    assert list(app[FEATURE_SERVICES]) == order
    app[AUTH].grants.store.close()
