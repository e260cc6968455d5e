"""Responses taken on the loop and handed to their callers (gateway/ros/calls/loop_client.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from gateway.ros.calls.loop_client import SeenReady, take_all

FOREIGN = (None, None)  # an answer to another client: rcl takes it, the take comes back empty


def _mine(seq: int) -> tuple[Any, str]:
    header = SimpleNamespace(request_id=SimpleNamespace(sequence_number=seq))
    return header, f"answer {seq}"


def _reader(samples: list[tuple[Any, Any]]) -> tuple[Callable[[Any], Any], list[int]]:
    """A take function over samples (then empty), and the count of takes made."""
    queue = list(samples)
    takes = [0]

    def take(cls: Any) -> Any:
        takes[0] += 1
        return queue.pop(0) if queue else (None, None)

    return take, takes


def _run(samples: list[tuple[Any, Any]], seqs: list[int], arrived: int,
         settle: Callable[[dict[int, asyncio.Future[Any]]], None] = lambda p: None,
         ) -> tuple[tuple[int, int], dict[int, Any], dict[int, asyncio.Future[Any]], int]:
    async def scenario() -> Any:
        loop = asyncio.get_running_loop()
        pending = {seq: loop.create_future() for seq in seqs}
        futs = dict(pending)
        settle(pending)
        take, takes = _reader(samples)
        counts = take_all(take, object, pending, arrived)
        done = {s: f.result() for s, f in futs.items() if f.done() and not f.cancelled()}
        return counts, done, pending, takes[0]

    return asyncio.run(scenario())  # type: ignore[no-any-return]


def test_every_reported_sample_is_taken_even_past_answers_to_other_clients() -> None:
    samples = [FOREIGN, _mine(1), FOREIGN, FOREIGN, _mine(2)]
    counts, done, pending, takes = _run(samples, [1, 2], arrived=5)
    assert counts == (2, 0)
    assert done == {1: "answer 1", 2: "answer 2"}
    assert pending == {}
    assert takes == 6  # the five reported, then one empty


def test_takes_go_on_past_the_reported_count_while_answers_come() -> None:
    # a sample that arrived after the count was read: taken now, not at the next wake-up
    counts, done, _, takes = _run([_mine(1), _mine(2)], [1, 2], arrived=1)
    assert counts == (2, 0) and set(done) == {1, 2}
    assert takes == 3


def test_a_spurious_wakeup_costs_one_empty_take() -> None:
    counts, done, pending, takes = _run([], [7], arrived=0)
    assert counts == (0, 0) and done == {} and set(pending) == {7}
    assert takes == 1


def test_late_answers_of_forgotten_or_settled_calls_are_dropped() -> None:
    def settle(pending: dict[int, asyncio.Future[Any]]) -> None:
        del pending[1]  # timed out: forgotten
        pending[2].cancel()  # its caller went away

    counts, done, pending, _ = _run([_mine(1), _mine(2), _mine(3)], [1, 2, 3], arrived=3,
                                    settle=settle)
    assert counts == (1, 2)
    assert done == {3: "answer 3"}
    assert pending == {}


def test_a_seen_server_holds_for_the_hold_time_and_is_asked_again_after() -> None:
    now = [100.0]
    answers = [False, True, False, False]
    asked = []

    def check() -> bool:
        asked.append(now[0])
        return answers.pop(0)

    ready = SeenReady(check, 0.1, clock=lambda: now[0])
    assert ready() is False          # no server yet: asked, and asked again next time
    assert ready() is True           # matched: held for 0.1 s without asking
    now[0] += 0.05
    assert ready() is True and len(asked) == 2
    now[0] += 0.06                   # past the hold: asked again, the server is gone
    assert ready() is False and len(asked) == 3
    assert ready() is False and len(asked) == 4  # a no is never held
