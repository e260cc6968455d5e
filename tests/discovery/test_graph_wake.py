"""GraphWake: the graph watch stops before a DDS rejoin and starts again on the new node."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from gateway.discovery import graph_wake
from gateway.ros.graph import graph_watch


class FakeWatch:
    """Stands in for the rcl wait (pure logic under test: when watches start and stop)."""

    made: list[FakeWatch] = []

    def __init__(self, node: Any, on_change: Callable[[], None]) -> None:
        self.node, self.on_change, self.stopped, self.notices = node, on_change, False, 0
        FakeWatch.made.append(self)

    def start(self) -> FakeWatch:
        return self

    def stop(self) -> None:
        self.stopped = True


class FakeBridge:
    def __init__(self) -> None:
        self.node = "node-1"
        self.rejoins = 0
        self.hooks: list[Callable[[], None]] = []

    def on_rejoin(self, hook: Callable[[], None]) -> None:
        self.hooks.append(hook)


@pytest.fixture(autouse=True)
def fake_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeWatch.made = []
    monkeypatch.setattr(graph_watch, "GraphWatch", FakeWatch)


def test_the_watch_follows_the_node_across_a_rejoin() -> None:
    async def run() -> None:
        bridge = FakeBridge()
        wake = graph_wake.GraphWake(bridge, enabled=True)
        assert wake.active() and FakeWatch.made[0].node == "node-1"
        assert wake.health()["graph_watch"] is True
        for hook in bridge.hooks:  # a rejoin begins: the old node is about to go
            hook()
        assert FakeWatch.made[0].stopped
        assert wake.changed.is_set()  # the poll looks at the graph at once
        assert not wake.active()  # not on the rejoin's interim node
        bridge.node, bridge.rejoins = "node-2", 1  # the rejoin is done
        assert wake.active() and FakeWatch.made[-1].node == "node-2"
        assert len(FakeWatch.made) == 2
        wake.stop()
        assert FakeWatch.made[-1].stopped and not wake.active()

    asyncio.run(run())


def test_a_notice_wakes_the_wait() -> None:
    async def run() -> None:
        wake = graph_wake.GraphWake(FakeBridge(), enabled=True)
        assert wake.active()
        assert await wake.wait(0.01) is False
        FakeWatch.made[0].on_change()  # as the watch thread does
        assert await wake.wait(5.0) is True

    asyncio.run(run())


def test_disabled_or_unavailable_means_polling() -> None:
    async def run() -> None:
        assert not graph_wake.GraphWake(FakeBridge(), enabled=False).active()

        def broken(node: Any, on_change: Callable[[], None]) -> FakeWatch:
            raise RuntimeError("no graph guard condition")

        graph_watch.GraphWatch = broken  # type: ignore[assignment,misc]
        wake = graph_wake.GraphWake(FakeBridge(), enabled=True)
        assert not wake.active() and wake.why_not == "no graph guard condition"
        assert wake.health() == {"graph_watch": False, "graph_watch_notices": 0}

    asyncio.run(run())
