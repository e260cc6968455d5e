"""Service responses handed to the event loop in batches (gateway/ros/calls/replies.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from gateway.ros.calls.replies import Reply, ReplyHub, forget, send, supports_slots


def test_posts_made_before_the_loop_runs_share_one_wakeup() -> None:
    async def scenario() -> tuple[list[Any], int, int]:
        hub = ReplyHub(asyncio.get_running_loop())
        futs = [asyncio.get_running_loop().create_future() for _ in range(5)]
        for k, fut in enumerate(futs):
            hub.post(fut, k)  # the loop does not run between these
        values = [await fut for fut in futs]
        return values, hub.wakeups, hub.delivered

    values, wakeups, delivered = asyncio.run(scenario())
    assert values == [0, 1, 2, 3, 4]
    assert (wakeups, delivered) == (1, 5)


def test_posts_from_another_thread_all_arrive_and_settled_futures_are_skipped() -> None:
    async def scenario() -> tuple[list[Any], bool, ReplyHub]:
        loop = asyncio.get_running_loop()
        hub = ReplyHub(loop)
        futs = [loop.create_future() for _ in range(200)]
        gone = loop.create_future()
        gone.cancel()  # a caller that gave up: its late answer is dropped

        def worker() -> None:
            hub.post(gone, "late")
            for k, fut in enumerate(futs):
                hub.post(fut, k)

        thread = threading.Thread(target=worker)
        thread.start()
        values = await asyncio.wait_for(asyncio.gather(*futs), 10.0)
        thread.join()
        return values, gone.cancelled(), hub

    values, cancelled, hub = asyncio.run(scenario())
    assert values == list(range(200)) and cancelled
    assert hub.delivered == 201 and 1 <= hub.wakeups <= 201


class _Handle:
    """The client handle's part the slot path uses: numbered sends."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def __enter__(self) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def send_request(self, request: Any) -> int:
        self.sent.append(request)
        return len(self.sent)


class _Client:
    """An rclpy Client's pending table, lock and handle."""

    def __init__(self) -> None:
        self._pending_requests: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.handle = _Handle()


def test_a_slot_leaves_the_pending_table_when_answered_or_forgotten() -> None:
    async def scenario() -> None:
        hub = ReplyHub(asyncio.get_running_loop())
        client = _Client()
        assert supports_slots(client) and not supports_slots(object())
        first, second = send(client, "a", hub), send(client, "b", hub)
        assert (first.seq, second.seq) == (1, 2)
        assert client._pending_requests == {1: first, 2: second}
        # what an rclpy executor does with a response: look the slot up, set its result
        slot = client._pending_requests[2]
        slot._set_executor(None)
        slot.set_result("answer")
        assert await second.afut == "answer"
        assert client._pending_requests == {1: first}
        forget(client, first)  # timed out
        assert client._pending_requests == {}
        assert not first.afut.done()

    asyncio.run(scenario())


def test_a_sequence_number_in_use_is_refused() -> None:
    async def scenario() -> None:
        hub = ReplyHub(asyncio.get_running_loop())
        client = _Client()
        client._pending_requests[1] = Reply(hub, asyncio.get_running_loop().create_future(),
                                            client._pending_requests)
        with pytest.raises(RuntimeError, match="conflicts"):
            send(client, "a", hub)

    asyncio.run(scenario())
