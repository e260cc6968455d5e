"""The peer client (gateway/federation/client.py): reasons, size cap, budgets; an in-process
server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.federation.client import PeerClient, PeerError, base_url, classify
from gateway.federation.settings import Budgets


def test_classify() -> None:
    assert classify(asyncio.TimeoutError()) == "timeout"
    assert classify(asyncio.CancelledError()) == "canceled"
    assert classify(aiohttp.ServerDisconnectedError()) == "unreachable"
    assert classify(ConnectionRefusedError()) == "unreachable"
    assert classify(ValueError("bad json")) == "invalid-response"
    assert classify(PeerError("too-large")) == "too-large"


def test_base_url() -> None:
    assert base_url("http://a:1/api/v1/") == "http://a:1"
    assert base_url(" http://a:1/ ") == "http://a:1"


async def _serve(handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                 work: Callable[[PeerClient], Awaitable[Any]]) -> Any:
    app = web.Application()
    app.router.add_get("/api/v1/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    client = PeerClient(f"http://127.0.0.1:{port}", Budgets(0.3, 1.0, 1.0), max_bytes=1024)
    try:
        return await work(client)
    finally:
        await client.close()
        await runner.cleanup()


def _reason(handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> str:
    async def work(client: PeerClient) -> str:
        try:
            await client.get_items("/apps/x/data", budget_s=0.3)
        except PeerError as exc:
            return exc.reason
        return "ok"
    return asyncio.run(_serve(handler, work))  # type: ignore[no-any-return]


def test_reasons_of_failed_calls() -> None:
    async def garbage(_: web.Request) -> web.Response:
        return web.Response(body=b"<html>", content_type="application/json")

    async def huge(_: web.Request) -> web.Response:
        return web.Response(body=b'{"items":["' + b"x" * 5000 + b'"]}')

    async def huge_chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for _ in range(10):
            await resp.write(b"x" * 500)
        return resp

    async def hang(_: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.Response()

    async def error(_: web.Request) -> web.Response:
        return web.Response(status=500)

    async def not_envelope(_: web.Request) -> web.Response:
        return web.json_response({"items": 3})

    assert _reason(garbage) == "invalid-response"
    assert _reason(huge) == "too-large"
    assert _reason(huge_chunked) == "too-large"
    assert _reason(hang) == "timeout"
    assert _reason(error) == "error-status"
    assert _reason(not_envelope) == "invalid-response"


def test_missing_route_omits_the_peer_and_envelopes_pass() -> None:
    async def missing(_: web.Request) -> web.Response:
        return web.json_response({"error_code": "resource-not-found"}, status=404)

    async def fine(_: web.Request) -> web.Response:
        return web.json_response({"items": [1]})

    async def work(client: PeerClient) -> Any:
        return await client.get_items("/x", budget_s=1.0)

    assert asyncio.run(_serve(missing, work)) is None
    assert asyncio.run(_serve(fine, work)) == {"items": [1]}


def test_unreachable_peer() -> None:
    async def work() -> str:
        client = PeerClient("http://127.0.0.1:9", Budgets(0.3, 1.0, 1.0), 1024)
        try:
            await client.get("/health", budget_s=0.5)
        except PeerError as exc:
            return exc.reason
        finally:
            await client.close()
        return "ok"
    assert asyncio.run(work()) == "unreachable"


@pytest.mark.parametrize("connections", [1, 5])
def test_one_pooled_session_is_reused(connections: int) -> None:
    seen: set[Any] = set()

    async def handler(request: web.Request) -> web.Response:
        seen.add(request.transport)
        return web.json_response({"items": []})

    async def work(client: PeerClient) -> None:
        for _ in range(connections):
            await client.get_items("/x", budget_s=1.0)

    asyncio.run(_serve(handler, work))
    assert len(seen) == 1  # keep-alive: sequential calls share one connection


def test_own_calls_carry_the_gateway_credential_only_to_configured_peers() -> None:
    from gateway.federation.peer_auth import PeerAuth
    from gateway.federation.peers import Peer

    auth = PeerAuth(forward_auth=False, peer_auth_header="Bearer own")
    client = PeerClient("http://a:1", Budgets(), 1024)
    assert Peer("a", "http://a:1", False, client).own_headers(auth) == {
        "Authorization": "Bearer own"}
    assert Peer("b", "http://b:1", True, client).own_headers(auth) == {}
