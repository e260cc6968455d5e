"""The gateway's action client keeps first answers and raises nothing into its executor
(gateway/ros/calls/action_client.py)."""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.ros.calls.action_client import _KINDS, GatewayActionClient


class Slot:
    """Stands in for an rclpy future: done once set."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    def done(self) -> bool:
        return bool(self.results)

    def set_result(self, value: Any) -> None:
        self.results.append(value)


def _client(**pending: dict[int, Slot]) -> Any:
    """A client with rclpy's bookkeeping and no rcl handle (nothing here sends)."""
    c: Any = GatewayActionClient.__new__(GatewayActionClient)
    c._lock = threading.Lock()
    c._action_name = "/twin/fib"
    c._action_type = None
    c._logger = logging.getLogger("test.action_client")
    c.duplicates = c.dropped = c.failures = 0
    c._answered = {kind: collections.deque(maxlen=8) for kind in _KINDS}
    c._pending_goal_requests = pending.get("goal", {})
    c._goal_sequence_number_to_goal_id = {}
    c._pending_cancel_requests = pending.get("cancel", {})
    c._pending_result_requests = pending.get("result", {})
    c._feedback_callbacks = {}
    c._goal_handles = {}
    c._is_goal_response_ready = True
    return c


def test_the_first_answer_counts_and_a_second_one_is_dropped_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    result, cancel = Slot(), Slot()
    c = _client(result={7: result}, cancel={3: cancel})
    with caplog.at_level(logging.WARNING, logger="gateway.ros.calls.action_client"):
        asyncio.run(c.execute({"result": (7, "first"), "cancel": (3, "first")}))
        asyncio.run(c.execute({"result": (7, "second"), "cancel": (3, "second")}))
        asyncio.run(c.execute({"result": (7, "third")}))
    assert result.results == ["first"] and cancel.results == ["first"]
    assert (c.duplicates, c.dropped) == (3, 0)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "/twin/fib" in warnings[0], warnings


def test_an_answer_to_a_request_given_up_is_dropped_quietly() -> None:
    c = _client()
    asyncio.run(c.execute({"goal": (4, "late"), "result": (9, "late")}))
    assert (c.duplicates, c.dropped) == (0, 2)


def test_a_second_answer_after_the_request_left_the_table_is_still_a_duplicate() -> None:
    result = Slot()
    c = _client(result={7: result})
    asyncio.run(c.execute({"result": (7, "first")}))
    del c._pending_result_requests[7]  # rclpy's done callback ran meanwhile
    asyncio.run(c.execute({"result": (7, "second")}))
    assert result.results == ["first"] and (c.duplicates, c.dropped) == (1, 0)


def test_failures_are_logged_and_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    c = _client()
    uuid = bytes(range(16))

    def broken(_msg: Any) -> None:
        raise RuntimeError("the loop closed")

    c._feedback_callbacks[uuid] = broken
    feedback = SimpleNamespace(goal_id=SimpleNamespace(uuid=list(uuid)))
    with caplog.at_level(logging.DEBUG, logger="gateway.ros.calls.action_client"):
        asyncio.run(c.execute({"feedback": feedback}))
        assert c.take_data() == {}  # no rcl handle: the take raises
    assert c.failures == 2
    assert [r.levelno for r in caplog.records] == [logging.ERROR, logging.DEBUG]
