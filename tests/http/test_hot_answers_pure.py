"""The hot-answer fast path: same bytes as the generic path, and it steps aside when it must."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.discovery.cache import EntityCache
from gateway.discovery.runtime import HostInfo
from gateway.faults.bodies import BodyCache
from gateway.http import hot
from gateway.http.routes import Registry
from gateway.http.server import GatewayRunner
from gateway.http.state import STATE, GatewayState
from gateway.settings.config import load
from tests.conftest import HOT_WIRE_SETTINGS, free_port

BODY = b'{"items":[1,2,3],"x-vendor":{"total_count":3}}'


class FakeForwarder:
    """Aggregation's forwarder as the fast path sees it: whether some entity comes from a peer."""

    def __init__(self, nothing: bool) -> None:
        self.nothing = nothing

    def forwards_nothing(self) -> bool:
        return self.nothing
Middleware = Callable[[web.Request, Any], Awaitable[web.StreamResponse]]


class Served:
    """A one-route app whose handler answers a cached body and offers a probe for it."""

    def __init__(self, settings: list[str] | None = None) -> None:
        self.calls = 0
        self.current: bytes | None = BODY  # what the probe says the handler would answer
        self.state = GatewayState(settings=load(None, settings or HOT_WIRE_SETTINGS),
                                  registry=Registry())

    async def handler(self, request: web.Request) -> web.Response:
        self.calls += 1
        body = self.current or b'{"rebuilt":true}'
        self.current = body
        if request.query.get("offer") == "merged":  # a merged read: its probe sees the request
            hot.offer_merged(self.state, request, lambda r: None if "X-Other" in r.headers
                             else self.current)
        elif request.query.get("offer") != "no":
            hot.offer(self.state, request, lambda: self.current)
        return web.Response(body=body, content_type="application/json")

    def app(self, *extra: Middleware, hook: bool = False) -> web.Application:
        @web.middleware
        async def own(request: web.Request, handler: Any) -> web.StreamResponse:
            if request.headers.get("Range") == "bytes=x":
                return web.Response(status=416, text="bad range")
            return await handler(request)  # type: ignore[no-any-return]

        app = web.Application(middlewares=[*extra, own])
        app[STATE] = self.state
        app.router.add_get("/api/v1/things", self.handler)
        if hook:
            async def add_header(request: web.Request, response: web.StreamResponse) -> None:
                response.headers["X-Hook"] = "1"
            app.on_response_prepare.append(add_header)
        return app

    @property
    def hits(self) -> int:
        answers = self.state.hot_answers
        return -1 if answers is None else int(answers.hits)


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    runner = GatewayRunner(app, "vendor", access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/api/v1/things"
    finally:
        await runner.cleanup()


async def fetch(session: aiohttp.ClientSession, url: str, method: str = "GET",
                **headers: str) -> tuple[int, dict[str, str], bytes]:
    async with session.request(method, url, headers=headers) as resp:
        return resp.status, dict(resp.headers), await resp.read()


def without_date(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k != "Date"}


def test_fast_answer_has_the_generic_headers_and_body() -> None:
    served = Served()

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            generic = await fetch(session, url)
            assert (served.calls, served.hits) == (1, 0)
            fast = await fetch(session, url)
            assert (served.calls, served.hits) == (1, 1)  # answered without the handler
            assert fast[0] == generic[0] == 200
            assert without_date(fast[1]) == without_date(generic[1])
            assert set(fast[1]) == set(generic[1])
            assert fast[2] == generic[2] == BODY
            served.current = None  # the handler's cache no longer holds: generic again
            rebuilt = await fetch(session, url)
            assert rebuilt[2] == b'{"rebuilt":true}' and served.calls == 2
            assert (await fetch(session, url))[2] == rebuilt[2] and served.calls == 2
            assert served.state.health["x-vendor-hot-answers"]() == {
                "paths": 1, "hits": 2, "on_wire": 0 if HOT_WIRE_SETTINGS else 2}

    asyncio.run(scenario())


STEP_ASIDE_VALUES = {"Range": "bytes=0-3", "Expect": "100-continue", "If-None-Match": '"abc"',
                     "If-Modified-Since": "Mon, 23 Nov 2026 22:00:00 GMT", "If-Match": '"abc"',
                     "If-Unmodified-Since": "Mon, 23 Nov 2026 22:00:00 GMT", "If-Range": '"abc"'}


@pytest.mark.parametrize(("method", "headers"), [
    ("HEAD", {}), *(("GET", {name: STEP_ASIDE_VALUES[name]}) for name in hot.STEP_ASIDE)])
def test_head_range_and_conditionals_take_the_generic_path(method: str,
                                                           headers: dict[str, str]) -> None:
    served = Served()

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            await fetch(session, url)
            status, _, _ = await fetch(session, url, method, **headers)
            assert status == 200 and served.calls == 2 and served.hits == 0

    asyncio.run(scenario())


def test_a_malformed_range_is_refused_on_a_hot_path() -> None:
    served = Served()

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            await fetch(session, url)
            await fetch(session, url)
            assert served.hits == 1
            status, _, body = await fetch(session, url, Range="bytes=x")
            assert (status, body) == (416, b"bad range")

    asyncio.run(scenario())


@pytest.mark.parametrize("setting", ["guard", "forwarder", "stopping"])
def test_per_request_settings_step_aside(setting: str) -> None:
    served = Served()

    async def check(request: web.Request, route: Any) -> None:
        return None

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            await fetch(session, url)
            if setting == "guard":  # authentication installs a check every request passes
                served.state.guard.add(check)
            elif setting == "forwarder":  # aggregation may answer from a peer
                served.state.forward = FakeForwarder(False)  # type: ignore[assignment]
            else:
                served.state.drain.stopping = True
            await fetch(session, url)
            assert served.calls == 2 and served.hits == 0

    asyncio.run(scenario())


def test_plain_probes_answer_while_aggregation_forwards_nothing() -> None:
    """A robot that runs aggregation only to announce itself (no entity from a peer) keeps
    the fast path; once a peer contributes an entity, plain probes step aside."""
    served = Served()
    forwarder = FakeForwarder(True)
    served.state.forward = forwarder  # type: ignore[assignment]

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            generic = await fetch(session, url)
            fast = await fetch(session, url)
            assert (served.calls, served.hits) == (1, 1)
            assert fast[2] == generic[2] and without_date(fast[1]) == without_date(generic[1])
            forwarder.nothing = False  # a peer joined: its entities may be forwarded
            await fetch(session, url)
            assert (served.calls, served.hits) == (2, 1)

    asyncio.run(scenario())


def test_a_merged_probe_answers_while_aggregation_forwards_and_sees_the_request() -> None:
    served = Served()
    # aggregation on with entities from peers: plain probes step aside
    served.state.forward = FakeForwarder(False)  # type: ignore[assignment]

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            await fetch(session, url)
            await fetch(session, url)
            assert served.calls == 2 and served.hits == 0
            generic = await fetch(session, url + "?offer=merged")
            fast = await fetch(session, url + "?offer=merged")
            assert (served.calls, served.hits) == (3, 1)
            assert fast[2] == generic[2] and without_date(fast[1]) == without_date(generic[1])
            await fetch(session, url + "?offer=merged", **{"X-Other": "1"})  # probe says no
            assert (served.calls, served.hits) == (4, 1)
            served.current = None  # the merged body is stale: the handler builds it again
            rebuilt = await fetch(session, url + "?offer=merged")
            assert rebuilt[2] == b'{"rebuilt":true}' and served.calls == 5
            served.state.drain.stopping = True  # a stop in progress: generic
            await fetch(session, url + "?offer=merged")
            assert (served.calls, served.hits) == (6, 1)

    asyncio.run(scenario())


def test_a_merged_probe_steps_aside_for_the_guard() -> None:
    served = Served()

    async def check(request: web.Request, route: Any) -> None:
        return None

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            await fetch(session, url + "?offer=merged")
            served.state.guard.add(check)  # authentication checks every request
            await fetch(session, url + "?offer=merged")
            assert served.calls == 2 and served.hits == 0

    asyncio.run(scenario())


def test_write_only_guard_checks_keep_the_fast_path() -> None:
    served = Served()

    async def lock_check(request: web.Request, route: Any) -> None:
        return None

    served.state.guard.add(lock_check, writes_only=True)  # locks guard writes, not GETs

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            await fetch(session, url)
            await fetch(session, url)
            assert served.calls == 1 and served.hits == 1

    asyncio.run(scenario())


def test_writes_skip_the_guard_only_while_every_write_check_is_quiet() -> None:
    from gateway.http.guard import Guard

    async def check(request: web.Request, route: Any) -> None:
        return None

    guard = Guard()
    assert guard.quiet_on_writes()  # nothing to check
    held = {"locks": 0}
    guard.add(check, writes_only=True, quiet=lambda: held["locks"] == 0)
    assert guard.quiet_on_writes()
    held["locks"] = 1  # a lock is held: every write must pass the check
    assert not guard.quiet_on_writes()
    held["locks"] = 0
    guard.add(check, writes_only=True)  # a write check that cannot say it is quiet
    assert not guard.quiet_on_writes()
    other = Guard()
    other.add(check)  # authentication looks at every request
    assert not other.quiet_on_writes()


def test_other_middlewares_or_response_hooks_disable_the_fast_path() -> None:
    @web.middleware
    async def limiter(request: web.Request, handler: Any) -> web.StreamResponse:
        response = await handler(request)
        response.headers["X-RateLimit-Remaining"] = "7"
        return response  # type: ignore[no-any-return]

    async def scenario(app: web.Application, served: Served, header: str) -> None:
        async with serving(app) as url, aiohttp.ClientSession() as session:
            for _ in range(3):
                _, headers, _ = await fetch(session, url)
                assert header in headers
            assert served.calls == 3 and served.hits == -1  # not installed
            assert served.state.hot_answers is None

    first, second = Served(), Served()
    asyncio.run(scenario(first.app(limiter), first, "X-RateLimit-Remaining"))
    asyncio.run(scenario(second.app(hook=True), second, "X-Hook"))


def test_each_raw_path_has_its_own_probe_and_unoffered_paths_stay_generic() -> None:
    served = Served()

    async def scenario() -> None:
        async with serving(served.app()) as url, aiohttp.ClientSession() as session:
            for _ in range(3):
                await fetch(session, url + "?offer=no")
            assert served.calls == 3 and served.hits == 0
            await fetch(session, url + "?a=1")
            await fetch(session, url + "?a=2")
            assert served.calls == 5
            await fetch(session, url + "?a=1")
            assert served.calls == 5 and served.hits == 1

    asyncio.run(scenario())


def test_store_is_bounded() -> None:
    async def generic(request: web.BaseRequest) -> web.StreamResponse:
        raise AssertionError("not called")

    answers = hot.HotAnswers(generic, GatewayState(load(None, []), Registry()).guard, {})
    for i in range(hot.MAX_PATHS + 5):
        answers.store(f"/p{i}", lambda: None)
    assert answers.stats()["paths"] <= hot.MAX_PATHS


def test_probe_lookups_count_hits_only_when_they_answer() -> None:
    cache = EntityCache(8, HostInfo.local())
    assert cache.cached(("list", "apps")) is None and (cache.hits, cache.misses) == (0, 0)
    cache.body(("list", "apps"), lambda: b"[]")
    assert cache.cached(("list", "apps")) == b"[]" and (cache.hits, cache.misses) == (1, 1)

    bodies = BodyCache()
    assert bodies.cached("k", 1) is None and (bodies.hits, bodies.misses) == (0, 0)
    bodies.put("k", 1, b"x")
    assert bodies.cached("k", 2) is None and bodies.cached("k", 1) == b"x"
    assert (bodies.hits, bodies.misses) == (1, 0)
