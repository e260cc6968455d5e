"""The lab's link emulator (tests/fleet/linkemu.py): when a chunk arrives on the other side."""

import asyncio
import time
from pathlib import Path

import pytest

from tests.fleet.linkemu import CHUNK, SEGMENT, Link, _pieces, open_link


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


def test_a_large_read_leaves_as_one_segment_then_chunks() -> None:
    # The first piece carries a response's head: under a cap it arrives after one segment's
    # serialization time, not after a whole chunk's (a real link's first segment).
    assert list(_pieces(100)) == [(0, 100)]
    assert list(_pieces(SEGMENT)) == [(0, SEGMENT)]
    size = SEGMENT + 2 * CHUNK + 7
    pieces = list(_pieces(size))
    assert pieces == [(0, SEGMENT), (SEGMENT, SEGMENT + CHUNK),
                      (SEGMENT + CHUNK, SEGMENT + 2 * CHUNK), (SEGMENT + 2 * CHUNK, size)]
    link = _link(0.0, 8_000_000)  # 1 MB a second
    first = link.due("down", pieces[0][1], now=0.0, last=0.0)
    assert first == pytest.approx(SEGMENT / 1e6)


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_no_byte_crosses_before_its_time_on_either_loop(tmp_path: Path, loop_name: str) -> None:
    # uvloop's timers count whole milliseconds and may fire before a due time between two:
    # every round trip through a 30 ms link still takes at least 30 ms, the first (the
    # request sent while the link's handshake runs) at least two.
    factory = asyncio.new_event_loop if loop_name == "asyncio" else \
        pytest.importorskip("uvloop").new_event_loop

    async def scenario() -> list[float]:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(100):
                writer.write(data)
            writer.close()
        target = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = target.sockets[0].getsockname()[1]
        link = Link(0.03, 0.0, 0.0, ("127.0.0.1", port))
        server, control = await open_link(link, ("127.0.0.1", 0), str(tmp_path / "ctl.sock"))
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.sockets[0].getsockname()[1])
        took = []
        for k in range(8):
            t0 = time.monotonic()
            writer.write(b"ping%d" % k)
            assert await reader.read(100) == b"ping%d" % k
            took.append(time.monotonic() - t0)
        writer.close()
        for pipe in list(link.pipes):  # the link's own sockets
            pipe.source.close()
        for s in (server, control, target):
            s.close()
        for _ in range(20):  # a few loop passes: the closes complete (uvloop's loop.close()
            await asyncio.sleep(0)  # waits on handles still closing)
        return took

    with asyncio.Runner(loop_factory=factory) as runner:
        took = runner.run(scenario())
    assert took[0] >= 0.06, took
    assert all(t >= 0.03 for t in took[1:]), took


def test_stats_count_the_bytes_carried_each_way(tmp_path: Path) -> None:
    async def scenario() -> str:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readexactly(5)
            writer.write(b"x" * 3000)
            await writer.drain()
            writer.close()
        target = await asyncio.start_server(answer, "127.0.0.1", 0)
        link = Link(0.0, 0.0, 0.0, ("127.0.0.1", target.sockets[0].getsockname()[1]))
        control_path = str(tmp_path / "ctl.sock")
        server, control = await open_link(link, ("127.0.0.1", 0), control_path)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.sockets[0].getsockname()[1])
        writer.write(b"hello")
        assert len(await reader.read()) == 3000  # to the target's close
        writer.close()
        ctl_reader, ctl_writer = await asyncio.open_unix_connection(control_path)
        ctl_writer.write(b"stats\n")
        line = (await ctl_reader.readline()).decode().strip()
        ctl_writer.close()
        for pipe in list(link.pipes):
            pipe.source.close()
        for s in (server, control, target):
            s.close()
        for _ in range(20):
            await asyncio.sleep(0)
        return line

    assert asyncio.run(scenario()) == "up=5 down=3000"
