"""Token buckets and the limiter, with explicit clocks; the middleware in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.http.jsonutil import json_response
from gateway.http.middleware import make_middleware
from gateway.http.ratelimit import (
    Decision,
    RateLimiter,
    TokenBucket,
    install,
    parse_endpoint_limits,
)
from gateway.http.routes import Registry
from gateway.http.state import STATE, GatewayState
from gateway.settings import config
from gateway.settings.config import ConfigError


def limiter(global_pm: int = 1000, client_pm: int = 60, endpoints: tuple[str, ...] = (),
            max_clients: int = 100) -> RateLimiter:
    return RateLimiter(global_pm, client_pm, parse_endpoint_limits(endpoints), max_clients, 0.0)


def test_bucket_refills_at_its_rate_up_to_capacity() -> None:
    b = TokenBucket(60, 0.0)
    b.tokens = 0.0
    b.refill(0.5)
    assert b.tokens == pytest.approx(0.5) and b.wait_s() == pytest.approx(0.5)
    b.refill(1000.0)
    assert b.tokens == 60.0 and b.full_in_s() == 0.0
    b.refill(999.0)  # a clock step back changes nothing
    assert b.tokens == 60.0


def test_client_limit_then_refill() -> None:
    rl = limiter(client_pm=3)
    got = [rl.check("a", "GET", "/apps", 0.0) for _ in range(4)]
    assert [d.allowed for d in got] == [True, True, True, False]
    assert [d.remaining for d in got] == [2, 1, 0, 0]
    refused = got[3]
    assert refused.limit == 3 and refused.retry_after_s == pytest.approx(20.0)
    assert rl.check("b", "GET", "/apps", 0.0).allowed  # other clients have their own bucket
    assert rl.check("a", "GET", "/apps", 20.0).allowed  # one token back after 20 s
    assert not rl.check("a", "GET", "/apps", 20.0).allowed


def test_global_limit_covers_all_clients() -> None:
    rl = limiter(global_pm=2, client_pm=100)
    assert rl.check("a", "GET", "/", 0.0).allowed and rl.check("b", "GET", "/", 0.0).allowed
    refused = rl.check("c", "GET", "/", 0.0)
    assert not refused.allowed and refused.limit == 2


def test_refusal_takes_no_token_from_other_buckets() -> None:
    rl = limiter(global_pm=5, client_pm=1)
    assert rl.check("a", "GET", "/", 0.0).allowed
    for _ in range(10):
        assert not rl.check("a", "GET", "/", 0.0).allowed
    assert rl.global_bucket.tokens == 4.0


def test_endpoint_limits() -> None:
    rl = limiter(client_pm=100, endpoints=("POST /apps/*/operations/*:2", "/faults*:1"))
    op = "/apps/a/operations/calibrate/executions"
    assert [rl.check("a", "POST", op, 0.0).allowed for _ in range(3)] == [True, True, False]
    assert rl.check("a", "GET", op, 0.0).allowed  # method given: GET is not limited
    assert rl.check("b", "POST", op, 0.0).allowed  # per client
    d = rl.check("a", "GET", "/faults", 0.0)
    assert d.allowed and d.limit == 1 and d.remaining == 0  # the tightest bucket is shown
    assert not rl.check("a", "DELETE", "/faults/X", 0.0).allowed


def test_endpoint_limit_parsing() -> None:
    (limit,) = parse_endpoint_limits(["/api/v1/apps/*:5"])
    assert limit.method is None and limit.per_minute == 5 and limit.pattern.match("/apps/x")
    for bad in ("/apps", "/apps:x", "apps/*:5", "/apps:0", "GET /apps:-1"):
        with pytest.raises(ConfigError, match="'rate_limiting.endpoint_limits'"):
            parse_endpoint_limits([bad])


def test_client_buckets_are_bounded() -> None:
    rl = limiter(client_pm=1, max_clients=100)
    for n in range(500):
        rl.check(f"c{n}", "GET", "/", 0.0)
    assert len(rl._buckets) == 100
    assert rl.check("c0", "GET", "/", 0.0).allowed  # evicted long ago: a fresh bucket


def test_decision_headers() -> None:
    refused = Decision(False, 60, 0, 30.2, 0.4).headers(1000.0)
    assert refused == {"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0",
                       "X-RateLimit-Reset": "1031", "Retry-After": "1"}
    assert "Retry-After" not in Decision(True, 60, 5, 1.0, 0.0).headers(1000.0)


def test_middleware_answers_429_with_headers(tmp_path: Path) -> None:
    settings = config.load(None, ["rate_limiting.enabled=true",
                                  "rate_limiting.client_requests_per_minute=2",
                                  f"state_dir={tmp_path}"])

    async def ok(request: web.Request) -> web.Response:
        return json_response({})

    reg = Registry("vendor")
    reg.add("GET", "/x", ok)
    state = GatewayState(settings=settings, registry=reg)
    app = web.Application()
    app[STATE] = state
    state.route_table = reg.install(app)
    app.middlewares.append(make_middleware(state))
    install(app, state, None)  # no auth: clients are told apart by address

    async def go() -> list[tuple[int, dict[str, str], dict]]:
        async with TestClient(TestServer(app)) as client:
            out = []
            for path in ("/api/v1/x", "/api/v1/missing", "/api/v1/x"):
                async with client.get(path) as r:
                    out.append((r.status, dict(r.headers), await r.json()))
            return out

    (s1, h1, _), (s2, h2, _), (s3, h3, b3) = asyncio.run(go())
    assert (s1, h1["X-RateLimit-Remaining"]) == (200, "1")
    assert (s2, h2["X-RateLimit-Remaining"]) == (404, "0")  # errors count and carry headers
    assert s3 == 429 and int(h3["Retry-After"]) >= 1 and h3["X-RateLimit-Limit"] == "2"
    assert b3["error_code"] == "vendor-error"
    assert b3["vendor_code"] == "x-vendor-rate-limit-exceeded"
