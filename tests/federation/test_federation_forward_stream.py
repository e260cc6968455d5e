"""A forwarded download streams (gateway/federation/forward.py `_relay`): headers and first
bytes go out before the peer sent the rest, the body byte-identical, a peer dying mid-body a
broken answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict

from gateway.federation.forward import Forwarder, Target, _pump, rewrites_body
from gateway.http.routes import Route
from gateway.model.roles import Role

BODY = bytes(range(256)) * 1200  # 300 kB, more than one chunk
FIRST = 5000


def test_only_a_json_document_is_read_whole_to_be_rewritten() -> None:
    def h(**kw: str) -> CIMultiDict[str]:
        return CIMultiDict({k.replace("_", "-"): v for k, v in kw.items()})
    assert rewrites_body(200, h(Content_Type="application/json"))
    assert rewrites_body(404, h(content_type="application/json; charset=utf-8"))
    assert not rewrites_body(200, h(Content_Type="application/x-mcap"))
    assert not rewrites_body(200, h(Content_Type="application/octet-stream"))
    assert not rewrites_body(200, h())
    # a JSON file downloaded, or a range of one: its bytes are the file's own
    assert not rewrites_body(200, h(Content_Type="application/json",
                                    Content_Disposition="attachment; filename=a.json"))
    assert not rewrites_body(206, h(Content_Type="application/json",
                                    Content_Range="bytes 0-9/100"))
    assert not rewrites_body(200, h(Content_Type="multipart/byteranges; boundary=x"))


Peer = Callable[[web.Request, asyncio.Event], Awaitable[web.StreamResponse]]


async def _serve(handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                 ) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


async def _through_relay(peer: Peer, check: Callable[[aiohttp.ClientResponse, asyncio.Event],
                                                     Awaitable[Any]]) -> Any:
    """Run a peer and a relay (Forwarder._relay) in this loop; check(client response, release)
    sees the relay's answer while the peer waits for release before its last part."""
    release = asyncio.Event()
    fed: Any = SimpleNamespace(settings=SimpleNamespace(budgets=SimpleNamespace(forward_s=10.0)),
                               view=SimpleNamespace(app_ids={}), rename=lambda p, a: a)
    forwarder = Forwarder(fed)
    route = Route("GET", "/apps/{app_id}/bulk-data/{category}/{bulk_id}", _unused,
                  Role.VIEWER, "")
    target = Target("robot", "/apps/a/bulk-data/files/1", ("apps", "a", "a"))
    peer_state: Any = SimpleNamespace(name="robot", last_bytes=0.0)
    async def peer_handler(request: web.Request) -> web.StreamResponse:
        return await peer(request, release)

    peer_runner, peer_url = await _serve(peer_handler)
    session = aiohttp.ClientSession(auto_decompress=False)

    async def relay(request: web.Request) -> web.StreamResponse:
        resp = await session.get(peer_url + "/file", headers=dict(request.headers))
        try:
            return await forwarder._relay(request, route, target, resp,
                                          time.monotonic() + 10.0, peer_state)
        finally:
            resp.release()

    relay_runner, relay_url = await _serve(relay)
    try:
        async with aiohttp.ClientSession(auto_decompress=False) as client, \
                client.get(relay_url + "/file") as answer:
            return await asyncio.wait_for(check(answer, release), 20)
    finally:
        release.set()
        await session.close()
        await relay_runner.cleanup()
        await peer_runner.cleanup()


async def _unused(request: web.Request) -> web.Response:
    raise AssertionError("not called")


def _peer(*, length: bool, status: int = 200, ctype: str = "application/octet-stream",
          die: bool = False, extra: dict[str, str] | None = None) -> Peer:
    """A peer sending FIRST bytes of BODY, then (once released) the rest, or dying instead."""
    async def handler(request: web.Request, release: asyncio.Event) -> web.StreamResponse:
        out = web.StreamResponse(status=status, headers={"Content-Type": ctype, **(extra or {})})
        if length:
            out.content_length = len(BODY)
        await out.prepare(request)
        await out.write(BODY[:FIRST])
        await release.wait()
        if die:
            assert request.transport is not None
            request.transport.close()
            return out
        await out.write(BODY[FIRST:])
        await out.write_eof()
        return out
    return handler


async def _first_then_rest(answer: aiohttp.ClientResponse, release: asyncio.Event
                           ) -> tuple[int, dict[str, str], bytes, bytes]:
    first = await answer.content.readexactly(FIRST)  # the peer holds back all the rest
    release.set()
    return answer.status, dict(answer.headers), first, await answer.content.read()


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "chunked"])
def test_headers_and_first_bytes_before_the_peer_sent_the_rest(length: bool) -> None:
    status, headers, first, rest = asyncio.run(_through_relay(_peer(length=length),
                                                              _first_then_rest))
    assert status == 200 and first + rest == BODY
    if length:
        assert headers["Content-Length"] == str(len(BODY))
    else:
        assert headers["Transfer-Encoding"] == "chunked"


def test_a_range_passes_through_as_is() -> None:
    # JSON by its media type, but a range of a file: never rewritten, never buffered
    peer = _peer(length=True, status=206, ctype="application/json",
                 extra={"Content-Range": f"bytes 100-{100 + len(BODY) - 1}/999999",
                        "Content-Disposition": "attachment; filename=a.json"})
    status, headers, first, rest = asyncio.run(_through_relay(peer, _first_then_rest))
    assert status == 206 and first + rest == BODY
    assert headers["Content-Range"] == f"bytes 100-{100 + len(BODY) - 1}/999999"
    assert headers["Content-Disposition"] == "attachment; filename=a.json"


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "chunked"])
def test_a_peer_dying_mid_body_breaks_the_answer(length: bool) -> None:
    async def check(answer: aiohttp.ClientResponse, release: asyncio.Event) -> str:
        assert answer.status == 200
        await answer.content.readexactly(FIRST)
        release.set()
        try:
            await answer.content.read()
        except aiohttp.ClientPayloadError:
            return "broken"
        return "complete"

    assert asyncio.run(_through_relay(_peer(length=length, die=True), check)) == "broken"


def test_a_connection_closed_under_a_read_counts_as_a_broken_answer() -> None:
    """aiohttp raises RuntimeError("Connection closed.") when the peer's connection goes while
    a read waits (a robot's tunnel closing): the answer is cut, not left hanging."""
    class _Content:
        async def read(self, n: int) -> bytes:
            raise RuntimeError("Connection closed.")

    class _Out:
        def __init__(self) -> None:
            self.written: list[bytes] = []

        async def write(self, chunk: bytes) -> None:
            self.written.append(chunk)

    out = _Out()
    resp: Any = SimpleNamespace(content=_Content())
    peer: Any = SimpleNamespace(name="robot1", last_bytes=0.0)
    assert asyncio.run(_pump(resp, out, [b"first"], 5.0, peer)) is False  # type: ignore[arg-type]
    assert out.written == [b"first"]
