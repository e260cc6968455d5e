"""Hot GETs answered on the wire: same bytes as aiohttp writes, and aiohttp parses the rest."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from gateway.http import hotwire
from gateway.http.server import GatewayRunner
from tests.conftest import free_port
from tests.http.test_hot_answers_pure import BODY, Served

GET = b"GET /api/v1/things HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n"


@pytest.mark.parametrize("chunk", [
    GET,
    b"GET /api/v1/things?a=1&b=%2F HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /x HTTP/1.1\r\nhost: x\r\n\r\n",
    b"GET /x HTTP/1.1\r\nConnection: Keep-Alive\r\nUser-Agent: a b/1.0\r\nHost: x\r\n\r\n",
])
def test_a_whole_plain_get_is_simple(chunk: bytes) -> None:
    assert hotwire.simple_get(chunk) == chunk.split(b" ")[1].decode()
    assert hotwire.whole_bodiless(chunk)


@pytest.mark.parametrize("chunk", [
    b"GET /x HTTP/1.1\r\nHost: x\r\n",  # not whole yet
    b"GET /x HTTP/1.1\r\nHost: x\r\n\r\nGET /y HTTP/1.1\r\n\r\n",  # pipelined
    b"GET /x HTTP/1.0\r\nHost: x\r\n\r\n",
    b"HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    b"GET http://h/x HTTP/1.1\r\nHost: x\r\n\r\n",  # absolute form
    b"GET /x  HTTP/1.1\r\n\r\n",
    b"GET /x HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"GET /x HTTP/1.1\r\nconnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
    b"GET /x HTTP/1.1\r\nRange: bytes=0-1\r\n\r\n",
    b"GET /x HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
    b"GET /x HTTP/1.1\r\nIf-None-Match: \"a\"\r\n\r\n",
    b"GET /x HTTP/1.1\r\nContent-Length: 3\r\n\r\n",
    b"GET /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"GET /x HTTP/1.1\r\nno colon here\r\n\r\n",  # aiohttp answers 400
    b"GET /x HTTP/1.1\r\n folded: x\r\n\r\n",
    b"GET /x HTTP/1.1\r\nBad Name: x\r\n\r\n",
    b"GET /\xc3\xa9 HTTP/1.1\r\n\r\n",
    b"GET /x HTTP/1.1\r\nCookie: " + b"a" * hotwire.MAX_CHUNK + b"\r\n\r\n",
    b"GET /x HTTP/1.1\r\n\r\n",  # no Host: aiohttp answers 400
    b"GET /x HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n",  # Host twice: 400
    b"GET /x HTTP/1.1\r\nHost: a\r\n" + b"X: y\r\n" * hotwire.MAX_HEADERS + b"\r\n",
])
def test_anything_else_is_for_aiohttp(chunk: bytes) -> None:
    assert hotwire.simple_get(chunk) is None


def test_a_chunk_ending_inside_a_body_leaves_the_parser_mid_message() -> None:
    assert not hotwire.whole_bodiless(b"POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\nab")
    assert not hotwire.whole_bodiless(b"POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\n")
    assert not hotwire.whole_bodiless(b"GET /x HTTP/1.1\r\nHost: x\r\n")


def test_the_fields_it_relies_on_are_in_this_aiohttp() -> None:
    assert hotwire.available()


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@asynccontextmanager
async def connection(served: Served, **runner: float) -> AsyncIterator[Conn]:
    """A raw keep-alive connection to the served app."""
    run = GatewayRunner(served.app(), "vendor", access_log=None, **runner)
    await run.setup()
    port = free_port()
    await web.TCPSite(run, "127.0.0.1", port).start()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield reader, writer
    finally:
        writer.close()
        await run.cleanup()


@asynccontextmanager
async def hot_connection(served: Served, first: bytes = GET, **runner: float
                         ) -> AsyncIterator[Conn]:
    """A connection on which `first` was answered by aiohttp, making its path hot."""
    async with connection(served, **runner) as conn:
        await ask(conn, first)
        yield conn


async def ask(conn: Conn, chunk: bytes) -> tuple[bytes, bytes]:
    """Send chunk; the next HTTP answer: (head, body)."""
    reader, writer = conn
    writer.write(chunk)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    return head, await asyncio.wait_for(reader.readexactly(length), 10)


def status(head: bytes) -> int:
    return int(head.split(b" ")[1])


def without_date(head: bytes) -> bytes:
    return b"\r\n".join(line for line in head.split(b"\r\n") if not line.startswith(b"Date:"))


def wire(served: Served) -> int:
    return int(served.state.health["x-vendor-hot-answers"]()["on_wire"])


def test_the_second_get_is_answered_on_the_wire_with_the_generic_bytes() -> None:
    served = Served()

    async def scenario() -> None:
        async with connection(served) as conn:
            generic = await ask(conn, GET)
            fast = await ask(conn, GET)
            assert (served.calls, served.hits, wire(served)) == (1, 1, 1)
            assert fast[1] == generic[1] == BODY
            assert without_date(fast[0]) == without_date(generic[0])
            served.current = None  # the probe no longer holds: aiohttp and the handler
            assert (await ask(conn, GET))[1] == b'{"rebuilt":true}' and served.calls == 2

    asyncio.run(scenario())


def test_setting_server_hot_wire_false_turns_the_wire_path_off() -> None:
    served = Served(["server.hot_wire=false"])

    async def scenario() -> None:
        async with connection(served) as conn:
            generic = await ask(conn, GET)
            fast = await ask(conn, GET)
            assert (served.calls, served.hits, wire(served)) == (1, 1, 0)  # hot.py answered
            assert fast[1] == generic[1] == BODY

    asyncio.run(scenario())


def test_pipelined_and_split_requests_go_through_aiohttp_in_order() -> None:
    served = Served()

    async def scenario() -> None:
        async with hot_connection(served) as conn:
            other = GET.replace(b"things", b"things?offer=no")
            assert (await ask(conn, GET + other))[1] == BODY  # two requests at once
            assert (await asyncio.wait_for(conn[0].readuntil(b"\r\n\r\n"), 10)).startswith(
                b"HTTP/1.1 200")
            assert (await asyncio.wait_for(conn[0].readexactly(len(BODY)), 10)) == BODY
            assert wire(served) == 0 and served.calls == 2
            conn[1].write(GET[:20])  # half a request: the parser keeps it
            await conn[1].drain()
            await asyncio.sleep(0.05)
            assert (await ask(conn, GET[20:]))[1] == BODY
            # after a split chunk this connection stays with aiohttp
            assert (await ask(conn, GET))[1] == BODY and wire(served) == 0
            assert served.hits == 3  # hot.py's path answered the hot ones

    asyncio.run(scenario())


def test_after_a_request_with_a_body_the_connection_stays_with_aiohttp() -> None:
    served = Served()
    post = (b"POST /api/v1/things HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n"
            b"\r\n\r\n\r\n\r\n")  # a body that looks like blank lines

    async def scenario() -> None:
        async with hot_connection(served) as conn:
            assert status((await ask(conn, post))[0]) == 405
            assert (await ask(conn, GET))[1] == BODY and wire(served) == 0

    asyncio.run(scenario())


def test_a_bad_header_line_gets_aiohttps_400_not_a_hot_answer() -> None:
    served = Served()

    async def scenario() -> None:
        async with hot_connection(served) as conn:
            head, body = await ask(conn, b"GET /api/v1/things HTTP/1.1\r\nno colon\r\n\r\n")
            assert status(head) == 400 and b"Malformed HTTP request" in body
            assert wire(served) == 0

    asyncio.run(scenario())


def test_connection_close_is_honoured() -> None:
    served = Served()

    async def scenario() -> None:
        async with hot_connection(served) as conn:
            closing = GET.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
            assert (await ask(conn, closing))[1] == BODY
            assert await asyncio.wait_for(conn[0].read(), 10) == b""  # closed by the server
            assert wire(served) == 0

    asyncio.run(scenario())


def test_keep_alive_lasts_from_the_last_wire_answer() -> None:
    served = Served()

    async def scenario() -> None:
        async with hot_connection(served, keepalive_timeout=0.6) as conn:
            for _ in range(6):  # 1.2 s of wire answers: longer than the keep-alive timeout
                await asyncio.sleep(0.2)
                assert (await ask(conn, GET))[1] == BODY
            assert wire(served) == 6
            # idle now: the server closes the connection after the timeout
            assert await asyncio.wait_for(conn[0].read(), 10) == b""

    asyncio.run(scenario())


def test_a_merged_read_is_answered_on_the_wire_with_its_probe_reading_the_headers() -> None:
    served = Served()
    served.state.forward = object()  # type: ignore[assignment]  # aggregation on: only merged probes answer
    merged = GET.replace(b"things", b"things?offer=merged")

    async def scenario() -> None:
        async with connection(served) as conn:
            generic = await ask(conn, merged)
            fast = await ask(conn, merged)
            assert (served.calls, wire(served)) == (1, 1) and fast[1] == generic[1] == BODY
            await ask(conn, merged.replace(b"\r\n\r\n", b"\r\nx-other:  1\r\n\r\n"))
            # the probe saw the header (in any case): the handler answered
            assert (served.calls, wire(served)) == (2, 1)

    asyncio.run(scenario())


def test_wire_request_headers_are_case_insensitive_and_trimmed() -> None:
    req = hotwire.WireRequest(b"GET /x HTTP/1.1\r\nHost: h\r\nX-Client-Id:\t abc \r\n"
                              b"accept-language: de\r\n\r\n")
    assert req.headers["x-client-id"] == "abc" and req.headers.get("Accept-Language") == "de"
    assert "Authorization" not in req.headers and req.headers["HOST"] == "h"


def test_verdicts_and_headers_of_repeated_chunks_are_remembered_and_bounded() -> None:
    chunks = [b"GET /p%d HTTP/1.1\r\nHost: h\r\nX-Client-Id: c%d\r\n\r\n" % (i, i)
              for i in range(hotwire.MAX_REMEMBERED + 3)]
    for i, chunk in enumerate(chunks):
        assert hotwire.simple_get(bytes(bytearray(chunk))) == f"/p{i}"
        assert hotwire.WireRequest(chunk).headers["x-client-id"] == f"c{i}"
    again = hotwire.WireRequest(bytes(bytearray(chunks[-1])))
    assert again.headers is hotwire.WireRequest(chunks[-1]).headers  # parsed once
    assert len(hotwire._verdicts) <= hotwire.MAX_REMEMBERED
    assert len(hotwire._headers) <= hotwire.MAX_REMEMBERED
    ranged = b"GET /x HTTP/1.1\r\nHost: h\r\nRange: bytes=0-1\r\n\r\n"
    assert hotwire.simple_get(ranged) is None
    assert hotwire.simple_get(ranged) is None  # kept


@pytest.mark.parametrize("second", [0, 951782400, 1709164800, 1767225599, 4102444800])
def test_the_date_is_written_as_aiohttp_writes_it(second: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from aiohttp import helpers

    monkeypatch.setattr(helpers.time, "time", lambda: second + 0.5)
    assert hotwire.http_date(second) == helpers.rfc822_formatted_time()


def test_the_date_holds_within_its_second_and_changes_with_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    wall = [1000.25]
    monkeypatch.setattr(hotwire.time, "time", lambda: wall[0])
    clock = hotwire._Clock()
    tail = clock.tick(50.0)  # loop time 50.0 is wall time 1000.25
    assert tail == (b"\r\nDate: " + hotwire.http_date(1000).encode() + b"\r\nServer: "
                    + hotwire.SERVER_SOFTWARE.encode() + b"\r\n\r\n")
    wall[0] = 1000.99
    assert clock.tick(50.74) is tail  # still second 1000: made once
    wall[0] = 1000.9985  # within 2 ms of the next second: made again, still second 1000
    assert clock.tick(50.7485) == tail
    wall[0] = 1001.0005
    assert b"Date: " + hotwire.http_date(1001).encode() in clock.tick(50.7505)


def test_a_kept_connection_writes_a_new_body_and_long_ones_alike() -> None:
    served = Served()
    other = GET.replace(b"Accept: */*", b"X-Client-Id: c1")  # another chunk, same path

    async def scenario() -> None:
        async with hot_connection(served) as conn:
            for body in (BODY, b'{"items":[4]}', b'{"long":"' + b"x" * 70000 + b'"}', BODY):
                served.current = body
                for chunk in (GET, GET, other, GET):
                    head, got = await ask(conn, chunk)
                    assert got == body and b"Content-Length: %d\r\n" % len(body) in head
            assert wire(served) == 16 and served.calls == 1

    asyncio.run(scenario())


def test_after_a_generic_answer_the_wire_path_answers_again() -> None:
    served = Served()
    ranged = GET.replace(b"\r\n\r\n", b"\r\nRange: bytes=x\r\n\r\n")

    async def scenario() -> None:
        async with hot_connection(served) as conn:
            assert (await ask(conn, GET))[1] == BODY and wire(served) == 1
            assert status((await ask(conn, ranged))[0]) == 416  # aiohttp and the middleware
            for _ in range(3):
                await asyncio.sleep(0.02)  # aiohttp's handler waits for the next request
                assert (await ask(conn, GET))[1] == BODY
            assert wire(served) == 4

    asyncio.run(scenario())
