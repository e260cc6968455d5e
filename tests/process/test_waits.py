"""gateway/process/waits.py: an event wait that never loses its task's cancellation."""

from __future__ import annotations

import asyncio

import pytest

from gateway.process.waits import wait_event, within


async def _ends_when_cancelled(task: asyncio.Task[None]) -> bool:
    """Cancel the task once; whether it ended cancelled (a task that ran on is stopped)."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=1.0)
    if not done:
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
        return False
    return task.cancelled()


def _loop_cancelled_as_its_event_is_set(wait: object) -> bool:
    """Run a loop that waits on an event each round; set the event and cancel the loop's task
    in the same iteration; whether the task ended (cancelled) rather than running on."""
    async def run() -> bool:
        wake = asyncio.Event()
        rounds = 0

        async def loop() -> None:
            nonlocal rounds
            while True:
                rounds += 1
                wake.clear()
                await wait(wake, 0.2)  # type: ignore[operator]

        task = asyncio.create_task(loop())
        await asyncio.sleep(0.05)  # the loop waits
        wake.set()
        await asyncio.sleep(0)  # the event's waiter is done, the loop not yet resumed
        return await _ends_when_cancelled(task)

    return asyncio.run(run())


def test_a_cancelled_wait_ends_its_loop() -> None:
    assert _loop_cancelled_as_its_event_is_set(wait_event)


def test_the_event_and_the_timeout_are_told_apart() -> None:
    async def run() -> tuple[bool, bool, bool]:
        event = asyncio.Event()
        timed_out = await wait_event(event, 0.01)
        asyncio.get_running_loop().call_later(0.01, event.set)
        woken = await wait_event(event, 5.0)
        already = await wait_event(event, 0)
        return timed_out, woken, already

    assert asyncio.run(run()) == (False, True, True)


def test_no_task_is_left_behind() -> None:
    async def run() -> int:
        before = len(asyncio.all_tasks())
        await wait_event(asyncio.Event(), 0.01)
        await asyncio.sleep(0)
        return len(asyncio.all_tasks()) - before

    assert asyncio.run(run()) == 0


@pytest.mark.skipif(not hasattr(asyncio, "timeout") or __import__("sys").version_info >= (3, 12),
                    reason="the lost cancellation is a Python 3.11 wait_for behaviour")
def test_wait_for_of_this_python_loses_it() -> None:
    """Why wait_event exists: asyncio.wait_for here lets the loop run on."""
    async def wait_for(event: asyncio.Event, timeout: float) -> None:
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    assert not _loop_cancelled_as_its_event_is_set(wait_for)


def test_within_answers_times_out_and_cancels_what_it_waited_for() -> None:
    async def run() -> tuple[int, bool]:
        assert await within(asyncio.sleep(0, result=7), 1.0) == 7
        slow = asyncio.ensure_future(asyncio.sleep(10))
        with pytest.raises(asyncio.TimeoutError):
            await within(slow, 0.01)
        return 7, slow.cancelled()

    assert asyncio.run(run()) == (7, True)


def test_within_never_loses_a_cancellation() -> None:
    """A loop's query finishes in the iteration in which the loop is cancelled (a graph query
    as the discovery poller stops): the loop ends."""
    async def run() -> bool:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[None] = loop.create_future()

        async def poller() -> None:
            while True:
                await within(gate, 5.0)
                await asyncio.sleep(0.01)  # the poll interval

        task = asyncio.create_task(poller())
        await asyncio.sleep(0.01)
        gate.set_result(None)  # done; the poller resumes in the next iteration
        return await _ends_when_cancelled(task)

    assert asyncio.run(run())

