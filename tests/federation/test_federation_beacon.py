"""The primary's end of a peer beacon (gateway/federation/beacon.py): when it stands in for a
probe."""

import asyncio
from typing import Any

import pytest

from gateway.federation.beacon import FULL_PROBE_S, BeaconReader
from gateway.federation.health import PROBE_BUDGET_S


def _reader() -> BeaconReader:
    return BeaconReader(session=None, url="", headers={}, interval_s=0.5,  # type: ignore[arg-type]
                        connect_s=1.0, on_stale=lambda: None, on_change=lambda: None)


def _with_open_stream(check: Any) -> None:
    async def run() -> None:
        reader = _reader()
        reader.task = asyncio.get_running_loop().create_task(asyncio.sleep(3600))
        try:
            check(reader)
        finally:
            reader.task.cancel()
    asyncio.run(run())


def test_fresh_while_lines_arrive_in_time() -> None:
    def check(reader: BeaconReader) -> None:
        reader.last_line = 100.0
        assert reader.fresh(100.0 + 0.5 + PROBE_BUDGET_S)
        assert not reader.fresh(100.0 + 0.5 + PROBE_BUDGET_S + 0.01)
    _with_open_stream(check)


def test_a_full_probe_still_goes_every_full_probe_period() -> None:
    def check(reader: BeaconReader) -> None:
        reader.last_line = 100.0
        assert not reader.stands_in(100.1)  # the first: a real probe
        assert reader.stands_in(100.2)
        reader.last_line = 100.0 + FULL_PROBE_S
        assert not reader.stands_in(100.1 + FULL_PROBE_S)
    _with_open_stream(check)


def test_an_answered_read_stands_in_for_the_full_probe() -> None:
    """While reads of the peer are answered, no full /health probe goes; once they stop, the
    next one is due FULL_PROBE_S after the last answer."""
    def check(reader: BeaconReader) -> None:
        reader.last_line = 100.0
        assert not reader.stands_in(100.1)  # the first full probe
        answered = 100.0 + FULL_PROBE_S - 1.0
        reader.last_line = 100.0 + FULL_PROBE_S
        assert reader.stands_in(100.1 + FULL_PROBE_S, answered)
        assert reader.quiet_s(100.1 + FULL_PROBE_S, answered) == pytest.approx(
            answered + FULL_PROBE_S - (100.1 + FULL_PROBE_S))
        reader.last_line = answered + FULL_PROBE_S
        assert not reader.stands_in(answered + FULL_PROBE_S, answered)  # reads stopped
        reader.last_line = 100.0 + 3 * FULL_PROBE_S
        assert not reader.stands_in(100.1 + 3 * FULL_PROBE_S)  # no answer: as before
    _with_open_stream(check)


def test_no_stream_no_stand_in_and_a_silent_stream_is_one_timeout() -> None:
    reader = _reader()
    reader.last_line = 100.0
    assert not reader.fresh(100.1)  # no stream open
    reader.timed_out = True
    assert reader.verdict() and not reader.verdict()


def test_the_probe_loop_sleeps_until_the_next_full_probe_while_the_beacon_is_fresh() -> None:
    def check(reader: BeaconReader) -> None:
        reader.last_line = 100.0
        assert not reader.stands_in(100.1)  # the full probe goes; the next in FULL_PROBE_S
        assert reader.quiet_s(100.2) == pytest.approx(FULL_PROBE_S - 0.1)
        assert reader.quiet_s(100.0 + 0.5 + PROBE_BUDGET_S + 0.01) == 0.0  # no longer fresh
    _with_open_stream(check)


def test_no_stream_no_sleep() -> None:
    reader = _reader()
    reader.last_line = 100.0
    assert reader.quiet_s(100.1) == 0.0


def _serve_and_read(lines: list[bytes], hold_s: float, interval_s: float = 0.1) -> dict[str, Any]:
    """A stream that writes `lines` (split anywhere) then stays open, silent, for hold_s; a
    reader on it: what it saw."""
    from aiohttp import ClientSession, web
    from aiohttp.test_utils import TestServer

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece in lines:
            await resp.write(piece)
            await asyncio.sleep(0.02)
        await asyncio.sleep(hold_s)
        return resp

    async def run() -> dict[str, Any]:
        app = web.Application()
        app.router.add_get("/beacon", stream)
        seen: dict[str, Any] = {"changes": 0, "stale": asyncio.Event()}
        async with TestServer(app) as server, ClientSession() as session:
            def changed() -> None:
                seen["changes"] += 1
            reader = BeaconReader(session, str(server.make_url("/beacon")), {}, interval_s,
                                  1.0, seen["stale"].set, changed, slack_s=lambda: 0.3)
            reader.start()
            await asyncio.wait_for(seen["stale"].wait(), 30)
            seen.update(etag=reader.etag, timed_out=reader.verdict(),
                        retry=reader.retry_at > float("-inf"))
            await reader.stop()
        return seen

    return asyncio.run(run())


def test_lines_split_across_chunks_are_read_and_a_silent_stream_times_out() -> None:
    seen = _serve_and_read([b": beacon\n\n", b"data: a", b"b\n\ndata: ab\n", b"\ndata: cd\n\n"],
                           hold_s=5.0)
    assert seen["etag"] == "cd" and seen["changes"] == 2  # "ab" once, then "cd"
    assert seen["timed_out"] and not seen["retry"]  # lines came, then silence: one timeout


def test_a_stream_that_never_gives_a_line_is_retried_later_not_a_timeout() -> None:
    seen = _serve_and_read([b": beacon\n\n"], hold_s=5.0)
    assert seen["etag"] is None and not seen["timed_out"] and seen["retry"]


def test_a_closed_stream_is_stale_at_once_without_a_timeout() -> None:
    seen = _serve_and_read([b"data: x\n\n"], hold_s=0.0, interval_s=5.0)
    assert seen["etag"] == "x" and not seen["timed_out"] and not seen["retry"]
