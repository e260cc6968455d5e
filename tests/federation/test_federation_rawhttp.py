"""The fan-out GET client: answers, keep-alive reuse, caps, fallbacks and cancellation."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.federation.rawhttp import RawPool, TooLarge, Unsupported, pool_for


def make_app() -> web.Application:
    async def items(request: web.Request) -> web.Response:
        return web.json_response({"items": [request.headers.get("X-Probe", "")]})

    async def chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(b'{"items": []}')
        await resp.write_eof()
        return resp

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({"items": []})

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/api/v1/items", items)
    app.router.add_get("/api/v1/chunked", chunked)
    app.router.add_get("/api/v1/slow", slow)
    app.router.add_get("/api/v1/missing", missing)
    return app


def test_answers_reuse_and_limits() -> None:
    async def scenario() -> None:
        async with TestServer(make_app()) as server:
            pool = RawPool("127.0.0.1", server.port)
            for i in range(3):
                status, body = await pool.get("/api/v1/items", {"X-Probe": str(i)}, 1 << 20)
                assert status == 200 and body == f'{{"items": ["{i}"]}}'.encode()
            assert len(pool._idle) == 1  # one connection served the three calls
            status, _ = await pool.get("/api/v1/missing", {}, 1 << 20)
            assert status == 404
            with pytest.raises(Unsupported):
                await pool.get("/api/v1/chunked", {}, 1 << 20)
            with pytest.raises(TooLarge):
                await pool.get("/api/v1/items", {}, 4)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(pool.get("/api/v1/slow", {}, 1 << 20), 0.2)
            # connections that failed or were cancelled mid-answer are not pooled again
            assert all(not c.closed for c in pool._idle)
            status, _ = await pool.get("/api/v1/items", {}, 1 << 20)
            assert status == 200
            pool.close()

    asyncio.run(scenario())


def test_pool_only_for_plain_http_base_urls() -> None:
    assert pool_for("http://127.0.0.1:8080") is not None
    assert pool_for("https://robot:8443") is None
    assert pool_for("http://robot:8080/prefix") is None


def test_an_answer_larger_than_one_read() -> None:
    big = {"items": ["x" * 1000] * 300}  # about 300 kB: many reads into the one buffer

    async def items(request: web.Request) -> web.Response:
        return web.json_response(big)

    async def scenario() -> None:
        app = web.Application()
        app.router.add_get("/api/v1/big", items)
        async with TestServer(app) as server:
            pool = RawPool("127.0.0.1", server.port)
            for _ in range(2):
                status, body = await pool.get("/api/v1/big", {}, 1 << 20)
                assert status == 200 and json.loads(body) == big
            pool.close()

    asyncio.run(scenario())


def test_connections_sharing_the_read_buffer_get_their_own_answers() -> None:
    # Every connection of a thread reads into one buffer; answers larger than it, read at
    # once on many connections, interleave their reads and still arrive whole and apart.
    bodies = {k: {"items": [str(k) * 1000] * 200} for k in range(8)}

    async def items(request: web.Request) -> web.Response:
        return web.json_response(bodies[int(request.match_info["k"])])

    async def scenario() -> None:
        app = web.Application()
        app.router.add_get("/api/v1/big/{k}", items)
        async with TestServer(app) as server:
            pools = [RawPool("127.0.0.1", server.port) for _ in bodies]
            got = await asyncio.gather(*(pool.get(f"/api/v1/big/{k}", {}, 1 << 22)
                                         for k, pool in enumerate(pools)))
            for k, (status, body) in enumerate(got):
                assert status == 200 and json.loads(body) == bodies[k]
            for pool in pools:
                pool.close()

    asyncio.run(scenario())


def test_calls_take_the_connection_idle_the_longest() -> None:
    # Two kept connections (one opened while the other was busy) are used in turn, so
    # neither sits idle long enough for the peer's keep-alive timeout to close it.
    async def scenario() -> None:
        async with TestServer(make_app()) as server:
            pool = RawPool("127.0.0.1", server.port)
            both = await asyncio.gather(pool.get("/api/v1/items", {}, 1 << 20),
                                        pool.get("/api/v1/items", {}, 1 << 20))
            assert [status for status, _ in both] == [200, 200]
            assert len(pool._idle) == 2
            used = []
            for _ in range(4):
                started = pool.start("/api/v1/items", {}, 1 << 20)
                assert started is not None
                used.append(started[0])
                await pool._await(*started)
            assert used[0] is not used[1] and used[0] is used[2] and used[1] is used[3]
            pool.close()

    asyncio.run(scenario())


def test_request_bytes_per_peer_share_their_header_lines() -> None:
    """Each peer's request names its own host; a fixed header replaces the caller's; what
    follows Host is built once for the peers of a fan-out and is the same."""
    a = RawPool("10.0.0.1", 8080, {"X-Tunnel": "secret"})
    b = RawPool("10.0.0.2", 9090)
    headers = {"Accept": "application/json", "X-Tunnel": "forged", "X-Client-Id": "c1"}
    assert a.request_bytes("/api/v1/apps?x=1", headers) == (
        b"GET /api/v1/apps?x=1 HTTP/1.1\r\nHost: 10.0.0.1:8080\r\nX-Tunnel: secret\r\n"
        b"Accept: application/json\r\nX-Client-Id: c1\r\n\r\n")
    assert b.request_bytes("/api/v1/apps?x=1", headers) == (
        b"GET /api/v1/apps?x=1 HTTP/1.1\r\nHost: 10.0.0.2:9090\r\n"
        b"Accept: application/json\r\nX-Tunnel: forged\r\nX-Client-Id: c1\r\n\r\n")
    assert b.request_bytes("/api/v1/apps", {}) == (
        b"GET /api/v1/apps HTTP/1.1\r\nHost: 10.0.0.2:9090\r\n\r\n")
