"""The caching dispatcher answers exactly as aiohttp's: params, 404 and 405 included."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.http import resolve_cache


def make_app() -> web.Application:
    async def item(request: web.Request) -> web.Response:
        keys = sorted(request.match_info)
        request.match_info["seen"] = "x"  # a handler scribbling on its match must not leak
        return web.json_response({"id": request.match_info["item_id"], "keys": keys})

    async def topic(request: web.Request) -> web.Response:
        return web.json_response({"topic": request.match_info["topic"]})

    app = web.Application()
    app.router.add_get("/items/{item_id}", item)
    app.router.add_get("/data/{topic}", topic)
    resolve_cache.install(app)
    return app


def test_same_answers_with_and_without_cache() -> None:
    async def scenario() -> None:
        async with TestServer(make_app()) as server, aiohttp.ClientSession() as session:
            for _ in range(3):  # the first request fills the cache, the others hit it
                async with session.get(server.make_url("/items/a")) as resp:
                    assert await resp.json() == {"id": "a", "keys": ["item_id"]}
                async with session.get(server.make_url("/items/b")) as resp:
                    assert await resp.json() == {"id": "b", "keys": ["item_id"]}
                async with session.get(server.make_url("/data/%2Fa%2Fb")) as resp:
                    assert await resp.json() == {"topic": "/a/b"}
                async with session.get(server.make_url("/nothing")) as resp:
                    assert resp.status == 404
                async with session.post(server.make_url("/items/a")) as resp:
                    assert resp.status == 405
            router = server.app.router
            assert isinstance(router, resolve_cache.CachingDispatcher)
            assert len(router._matches) == 3  # only successful matches are kept

    asyncio.run(scenario())
