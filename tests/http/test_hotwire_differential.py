"""Hotwire against aiohttp, request by request: a corpus of odd requests sent to a server with
the wire path on and to one with it off must get the same status, headers and body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web, web_protocol
from aiohttp.http_parser import HttpRequestParserPy

from gateway.http import hotwire
from gateway.http.server import GatewayRunner
from tests.conftest import free_port
from tests.http.test_hot_answers_pure import Served

PATH = b"/api/v1/things"
GET = b"GET " + PATH + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n"


def _get(*headers: bytes, line: bytes = b"GET " + PATH + b" HTTP/1.1") -> bytes:
    return line + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"


def _many(n: int) -> list[bytes]:
    return [b"Host: h"] + [b"X-H%d: v" % i for i in range(n - 1)]


CORPUS: dict[str, bytes] = {
    # well formed: both answer 200 (the wire path answers these)
    "plain": GET,
    "host-only": _get(b"Host: h"),
    "keep-alive": _get(b"Host: h", b"Connection: keep-alive"),
    "client-id": _get(b"Host: h", b"X-Client-Id: c1", b"Accept-Language: de"),
    "obs-text value": _get(b"Host: h", b"X-Note: caf\xc3\xa9 \xff"),
    "empty value": _get(b"Host: h", b"X-Empty:"),
    "tab in value": _get(b"Host: h", b"X-Tab:\tone\ttwo\t"),
    "host empty": _get(b"Host:"),
    "60 headers": _get(*_many(60)),
    # Host: missing or repeated
    "no host": _get(b"Accept: */*"),
    "no headers": _get(),
    "two hosts": _get(b"Host: a", b"Host: b"),
    "two hosts, same": _get(b"Host: a", b"host: a"),
    # repeated singletons and other repeated names
    "two user-agents": _get(b"Host: h", b"User-Agent: a", b"User-Agent: b"),
    "two content-types": _get(b"Host: h", b"Content-Type: a/b", b"Content-Type: a/b"),
    "two max-forwards": _get(b"Host: h", b"Max-Forwards: 1", b"Max-Forwards: 2"),
    "two etags": _get(b"Host: h", b"ETag: \"a\"", b"ETag: \"b\""),
    "two servers": _get(b"Host: h", b"Server: a", b"Server: b"),
    "two connections": _get(b"Host: h", b"Connection: keep-alive", b"Connection: close"),
    "two client ids": _get(b"Host: h", b"X-Client-Id: a", b"X-Client-Id: b"),
    # header counts around aiohttp's limit (128)
    "127 headers": _get(*_many(127)),
    "128 headers": _get(*_many(128)),
    "129 headers": _get(*_many(129)),
    "200 headers": _get(*_many(200)),
    # malformed header lines
    "no colon": _get(b"Host: h", b"no colon here"),
    "space before colon": _get(b"Host : h"),
    "space in name": _get(b"Host: h", b"Bad Name: x"),
    "empty name": _get(b"Host: h", b": x"),
    "obs-fold": _get(b"Host: h", b"X-Folded: a", b" b"),
    "obs-fold tab": _get(b"Host: h", b"X-Folded: a", b"\tb"),
    "nul in value": _get(b"Host: h", b"X-Nul: a\x00b"),
    "del in value": _get(b"Host: h", b"X-Del: a\x7fb"),
    "ctl in value": _get(b"Host: h", b"X-Ctl: a\x01b"),
    "cr in value": _get(b"Host: h", b"X-Cr: a\rb"),
    "non-token name": _get(b"Host: h", b"X(y): 1"),
    "utf-8 name": _get(b"Host: h", b"X-\xc3\xa9: 1"),
    # framing
    "bare lf": b"GET " + PATH + b" HTTP/1.1\nHost: h\n\n",
    "bare lf in headers": b"GET " + PATH + b" HTTP/1.1\r\nHost: h\nAccept: */*\r\n\r\n",
    "bare cr": b"GET " + PATH + b" HTTP/1.1\r\nHost: h\rX: y\r\n\r\n",
    "leading blank line": b"\r\n" + GET,
    "content-length 0": _get(b"Host: h", b"Content-Length: 0"),
    "two content-lengths": _get(b"Host: h", b"Content-Length: 0", b"Content-Length: 0"),
    "chunked empty": _get(b"Host: h", b"Transfer-Encoding: chunked") + b"0\r\n\r\n",
    "te and cl": _get(b"Host: h", b"Transfer-Encoding: chunked", b"Content-Length: 0")
                 + b"0\r\n\r\n",
    "connection close": _get(b"Host: h", b"Connection: close"),
    "connection upgrade": _get(b"Host: h", b"Connection: upgrade", b"Upgrade: websocket"),
    "range": _get(b"Host: h", b"Range: bytes=0-1"),
    "bad range": _get(b"Host: h", b"Range: bytes=x"),
    "if-none-match": _get(b"Host: h", b"If-None-Match: \"a\""),
    # request lines: methods, versions, targets
    "http/1.0": _get(b"Host: h", line=b"GET " + PATH + b" HTTP/1.0"),
    "http/1.0 no host": _get(line=b"GET " + PATH + b" HTTP/1.0"),
    "http/2.0": _get(b"Host: h", line=b"GET " + PATH + b" HTTP/2.0"),
    "http/1.2": _get(b"Host: h", line=b"GET " + PATH + b" HTTP/1.2"),
    "lowercase version": _get(b"Host: h", line=b"GET " + PATH + b" http/1.1"),
    "lowercase get": _get(b"Host: h", line=b"get " + PATH + b" HTTP/1.1"),
    "head": _get(b"Host: h", line=b"HEAD " + PATH + b" HTTP/1.1"),
    "options": _get(b"Host: h", line=b"OPTIONS " + PATH + b" HTTP/1.1"),
    "unknown method": _get(b"Host: h", line=b"FETCH " + PATH + b" HTTP/1.1"),
    "two spaces": _get(b"Host: h", line=b"GET  " + PATH + b" HTTP/1.1"),
    "trailing space": _get(b"Host: h", line=b"GET " + PATH + b" HTTP/1.1 "),
    "tab separator": _get(b"Host: h", line=b"GET\t" + PATH + b" HTTP/1.1"),
    "absolute form": _get(b"Host: h", line=b"GET http://h" + PATH + b" HTTP/1.1"),
    "asterisk": _get(b"Host: h", line=b"GET * HTTP/1.1"),
    "fragment": _get(b"Host: h", line=b"GET " + PATH + b"#f HTTP/1.1"),
    "query": _get(b"Host: h", line=b"GET " + PATH + b"?a=1 HTTP/1.1"),
    "ctl in target": _get(b"Host: h", line=b"GET " + PATH + b"\x01 HTTP/1.1"),
    "utf-8 target": _get(b"Host: h", line=b"GET " + PATH + b"\xc3\xa9 HTTP/1.1"),
    "no version": _get(b"Host: h", line=b"GET " + PATH),
    # long lines (the wire path takes chunks up to MAX_CHUNK only)
    "long header": _get(b"Host: h", b"Cookie: " + b"a" * 7000),
    "longer header": _get(b"Host: h", b"Cookie: " + b"a" * 9000),
    "long target": _get(b"Host: h", line=b"GET " + PATH + b"?q=" + b"b" * 7000 + b" HTTP/1.1"),
}

Outcome = tuple[int, bytes, bytes, bool]  # status, head without Date, body, closed after


@asynccontextmanager
async def server(served: Served, wire: bool) -> AsyncIterator[int]:
    """A gateway runner serving the one-route app; `wire` False turns the wire path off."""
    runner = GatewayRunner(served.app(), "vendor", access_log=None)
    await runner.setup()
    if not wire:
        assert runner.server is not None
        runner.server.hot_answers = None  # type: ignore[attr-defined]
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield port
    finally:
        await runner.cleanup()


async def _answer(reader: asyncio.StreamReader, head_only: bool = False
                  ) -> tuple[bytes, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = 0 if head_only else next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return head, await asyncio.wait_for(reader.readexactly(length), 10)


async def outcome(port: int, chunk: bytes) -> Outcome:
    """Prime the path with a plain GET (aiohttp answers it), send chunk, read what comes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(GET)
        await _answer(reader)
        writer.write(chunk)
        try:
            head, body = await _answer(reader, head_only=chunk.startswith(b"HEAD "))
        except asyncio.IncompleteReadError as exc:
            assert exc.partial == b"", exc.partial  # closed without an answer
            return 0, b"", b"", True
        # A second plain GET tells whether the connection is still open.
        writer.write(GET)
        try:
            await _answer(reader)
            closed = False
        except (asyncio.IncompleteReadError, ConnectionError):
            closed = True
        lines = [line for line in head.split(b"\r\n") if not line.startswith(b"Date:")]
        return int(head.split(b" ")[1]), b"\r\n".join(lines), body, closed
    finally:
        writer.close()


@pytest.mark.parametrize("parser", ["llhttp", "python"])
def test_every_request_of_the_corpus_is_answered_alike_with_and_without_the_wire_path(
        parser: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert hotwire.available()
    if parser == "python":  # aiohttp's pure-Python parser (AIOHTTP_NO_EXTENSIONS)
        monkeypatch.setattr(web_protocol, "HttpRequestParser", HttpRequestParserPy)
    on, off = Served(), Served()

    async def scenario() -> dict[str, tuple[Outcome, Outcome]]:
        async with server(on, True) as port_on, server(off, False) as port_off:
            results = {}
            for name, chunk in CORPUS.items():
                results[name] = (await outcome(port_on, chunk), await outcome(port_off, chunk))
            return results

    results = asyncio.run(scenario())
    differ = {name: pair for name, pair in results.items() if pair[0] != pair[1]}
    assert not differ, differ
    wire = on.state.health["x-vendor-hot-answers"]()["on_wire"]
    answered = [n for n, (o, _) in results.items() if o[0] == 200]
    refused = [n for n, (o, _) in results.items() if o[0] == 400]
    # the corpus exercises both: wire answers, and aiohttp's refusals
    assert wire >= 9 and len(answered) >= 9, (wire, answered)
    assert {"no host", "two hosts", "129 headers", "obs-fold", "no colon"} <= set(refused)
    assert off.state.health["x-vendor-hot-answers"]()["on_wire"] == 0


@pytest.mark.parametrize("name", ["no host", "no headers", "two hosts", "two hosts, same",
                                  "two user-agents", "two connections", "129 headers",
                                  "200 headers", "utf-8 target", "ctl in target"])
def test_what_aiohttp_refuses_or_judges_is_left_to_it(name: str) -> None:
    assert hotwire.simple_get(CORPUS[name]) is None


async def sequence(port: int, chunks: list[bytes]) -> list[tuple[int, bytes, bytes]]:
    """The answers (status, head without Date, body) to chunks sent one by one on one
    connection, each after the last answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    out = []
    try:
        for chunk in chunks:
            writer.write(chunk)
            head, body = await _answer(reader)
            lines = [line for line in head.split(b"\r\n") if not line.startswith(b"Date:")]
            out.append((int(head.split(b" ")[1]), b"\r\n".join(lines), body))
            await asyncio.sleep(0.005)  # aiohttp's handler waits again
    finally:
        writer.close()
    return out


def test_one_kept_connection_gets_the_same_answers_with_and_without_the_wire_path() -> None:
    """Each connection remembers its last chunk and answer: a sequence of well formed and
    stepped-aside requests on one connection is answered alike either way."""
    names = ["plain", "host-only", "keep-alive", "client-id", "obs-text value", "empty value",
             "tab in value", "60 headers", "range", "if-none-match", "query", "127 headers"]
    chunks = [CORPUS[n] for n in names] * 2 + [GET] * 3 + [CORPUS["client-id"]] * 3
    on, off = Served(), Served()

    async def scenario() -> tuple[list[tuple[int, bytes, bytes]], ...]:
        async with server(on, True) as port_on, server(off, False) as port_off:
            return await sequence(port_on, chunks), await sequence(port_off, chunks)

    got_on, got_off = asyncio.run(scenario())
    assert got_on == got_off
    assert on.state.health["x-vendor-hot-answers"]()["on_wire"] >= 20
