"""The lab's link emulator (tests/fleet/linkemu.py): when a chunk arrives on the other side."""

import asyncio

from tests.fleet.linkemu import Link


def _link(rtt_s: float, rate_bps: float) -> Link:
    async def make() -> Link:
        return Link(rtt_s, 0.0, rate_bps)
    return asyncio.run(make())


def test_half_the_rtt_each_way_without_a_cap() -> None:
    link = _link(0.08, 0)
    assert link.due("down", 1000, now=10.0, last=0.0) == 10.04


def test_the_cap_serializes_chunks_of_one_direction() -> None:
    link = _link(0.0, 8000)  # 1000 bytes a second
    assert link.due("down", 500, now=0.0, last=0.0) == 0.5
    assert link.due("down", 500, now=0.0, last=0.5) == 1.0
    assert link.due("up", 500, now=0.0, last=0.0) == 0.5  # the other direction is free


def test_order_is_kept_whatever_the_jitter() -> None:
    link = _link(0.08, 0)
    link.jitter_s = 0.05
    last = 0.0
    for k in range(50):
        due = link.due("down", 10, now=k * 0.001, last=last)
        assert due >= last
        last = due
