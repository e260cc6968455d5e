"""FaultReporter coalescing: a burst in few messages, a lone report at once, order kept."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from gateway.faults.reporter import BATCH_MAX, FaultReporter


class _Publisher:
    def __init__(self) -> None:
        self.messages: list[list[dict[str, Any]]] = []
        self.lock = threading.Lock()

    def publish(self, msg: Any) -> None:
        with self.lock:
            self.messages.append(json.loads(msg.data)["reports"])

    def seqs(self) -> list[int]:
        with self.lock:
            return [r["seq"] for m in self.messages for r in m]


class _Node:
    """Stands in for an rclpy node: records what the reporter publishes."""

    def __init__(self) -> None:
        self.pub = _Publisher()

    def get_namespace(self) -> str:
        return "/unit"

    def get_name(self) -> str:
        return "coalesce"

    def create_publisher(self, *_: Any, **__: Any) -> _Publisher:
        return self.pub

    def create_subscription(self, *_: Any, **__: Any) -> object:
        return object()

    def create_timer(self, *_: Any, **__: Any) -> object:
        return object()

    def destroy_publisher(self, _: Any) -> None: ...
    def destroy_subscription(self, _: Any) -> None: ...
    def destroy_timer(self, _: Any) -> None: ...


def _wait(cond: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.001)


@pytest.fixture
def node() -> _Node:
    return _Node()


def test_a_burst_goes_out_in_few_messages_in_order(node: _Node) -> None:
    rep = FaultReporter(node, max_pending=10_000)
    try:
        for i in range(1000):
            rep.report(f"C{i % 7}", 2, f"m{i}")
        _wait(lambda: len(node.pub.seqs()) == 1000)
        assert node.pub.seqs() == list(range(1, 1001))  # every report once, in order
        sizes = [len(m) for m in node.pub.messages]
        assert sizes[0] == 1  # the first report of the burst went out at once
        assert max(sizes) <= BATCH_MAX
        assert len(sizes) <= 100  # many reports per message (one each before coalescing)
    finally:
        rep.destroy()


def test_a_report_after_a_quiet_moment_is_published_at_once(node: _Node) -> None:
    rep = FaultReporter(node, coalesce_sec=0.05)
    try:
        rep.report("FIRST", 2)
        assert node.pub.seqs() == [1]  # published inside report(), no waiting
        rep.report("SECOND", 2)  # within the window: waits for the flusher
        _wait(lambda: node.pub.seqs() == [1, 2])
        last = rep._last_send
        _wait(lambda: time.monotonic() - last > rep.coalesce_sec)
        rep.report_passed("FIRST")
        assert node.pub.seqs() == [1, 2, 3]
    finally:
        rep.destroy()


def test_zero_window_publishes_every_report_alone(node: _Node) -> None:
    rep = FaultReporter(node, coalesce_sec=0)
    try:
        for i in range(50):
            rep.report(f"C{i}", 2)
        assert [len(m) for m in node.pub.messages] == [1] * 50
        assert rep._flusher is None
    finally:
        rep.destroy()


def test_destroy_publishes_what_waits(node: _Node) -> None:
    rep = FaultReporter(node, coalesce_sec=60)  # the flusher would wait a minute
    rep.report("A", 2)
    rep.report("B", 2)
    rep.report("C", 2)
    assert node.pub.seqs() == [1]
    rep.destroy()
    assert node.pub.seqs() == [1, 2, 3]
    assert rep._flusher is not None and not rep._flusher.is_alive()


def test_reports_from_several_threads_all_go_out_once(node: _Node) -> None:
    rep = FaultReporter(node, max_pending=10_000)

    def burst(k: int) -> None:
        for i in range(300):
            rep.report(f"T{k}_{i % 3}", 2, f"{i}")

    threads = [threading.Thread(target=burst, args=(k,)) for k in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _wait(lambda: len(node.pub.seqs()) == 1200)
        assert sorted(node.pub.seqs()) == list(range(1, 1201))
        # one thread's reports keep their order
        for k in range(4):
            mine = [int(r["description"]) for m in node.pub.messages for r in m
                    if r["code"].startswith(f"T{k}_")]
            assert mine == list(range(300))
    finally:
        rep.destroy()
