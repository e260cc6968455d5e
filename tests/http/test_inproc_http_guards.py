"""CORS and rate limits in process (the cors and ratelimit middlewares): preflights answered
before auth, foreign origins refused, headers on answers and errors; per-client and
per-endpoint buckets with their headers and 429s."""

from __future__ import annotations

from tests.auth.test_inproc_roles import SECRET, auth_settings, mint
from tests.inproc.inproc_gateway import Gw, Runner

API = "/api/v1"
ORIGIN = "http://dashboard.example:3000"
CORS = (f"cors.allowed_origins=['{ORIGIN}']", "cors.allow_credentials=true",
        "cors.max_age_seconds=120")
LIMITS = ("rate_limiting.enabled=true", "rate_limiting.client_requests_per_minute=6",
          "rate_limiting.global_requests_per_minute=1000",
          "rate_limiting.endpoint_limits=['GET /version-info:2']",
          f"cors.allowed_origins=['{ORIGIN}']")


def bearer(role: str) -> dict[str, str]:
    """The Authorization header of a token of `role` (its own client: the token subject)."""
    return {"Authorization": f"Bearer {mint(SECRET, role)}"}


async def status_of(gw: Gw, method: str, path: str, headers: dict[str, str]) -> int:
    async with gw.client.request(method, API + path, headers=headers) as resp:
        return resp.status


def test_cors_preflight_is_answered_before_auth(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        # What a browser sends before a cross-origin PUT with a bearer token.
        async with gw.client.options(f"{API}/apps/x/data/y", headers={
                "Origin": ORIGIN, "Access-Control-Request-Method": "PUT",
                "Access-Control-Request-Headers": "authorization,content-type,x-client-id",
                "Sec-Fetch-Mode": "cors", "Referer": ORIGIN + "/"}) as resp:
            assert resp.status == 204, await resp.text()
            h = resp.headers
        assert h["Access-Control-Allow-Origin"] == ORIGIN
        assert h["Access-Control-Allow-Credentials"] == "true"
        assert "PUT" in h["Access-Control-Allow-Methods"]
        allowed = {x.strip().lower() for x in h["Access-Control-Allow-Headers"].split(",")}
        no_fan_out = f"{gw.xv}-no-fan-out"
        assert {"authorization", "content-type", "x-client-id", no_fan_out} <= allowed
        assert h["Access-Control-Max-Age"] == "120"
        assert "Origin" in h["Vary"]

    gateway(scenario, settings=auth_settings("all") + CORS)


def test_cors_refuses_foreign_origins_methods_and_headers(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for headers in ({"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"},
                        {"Origin": ORIGIN, "Access-Control-Request-Method": "PATCH"},
                        {"Origin": ORIGIN, "Access-Control-Request-Method": "GET",
                         "Access-Control-Request-Headers": "x-secret-header"}):
            async with gw.client.options(f"{API}/apps", headers=headers) as resp:
                assert resp.status == 403, headers
                assert "Access-Control-Allow-Origin" not in resp.headers

    gateway(scenario, settings=auth_settings("all") + CORS)


def test_cors_headers_on_answers_and_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        token = bearer("viewer")
        async with gw.client.get(f"{API}/apps", headers={"Origin": ORIGIN, **token}) as resp:
            assert resp.status == 200
            assert resp.headers["Access-Control-Allow-Origin"] == ORIGIN
            exposed = resp.headers["Access-Control-Expose-Headers"]
            assert "Content-Disposition" in exposed and "Retry-After" in exposed
        # A 401 is readable by the page too (so it can ask for a token).
        async with gw.client.get(f"{API}/apps", headers={"Origin": ORIGIN}) as resp:
            assert resp.status == 401
            assert resp.headers["Access-Control-Allow-Origin"] == ORIGIN
        async with gw.client.get(f"{API}/apps", headers={"Origin": "http://evil.example",
                                                         **token}) as resp:
            assert resp.status == 200 and "Access-Control-Allow-Origin" not in resp.headers
        # Without an allowed preflight nothing is granted: OPTIONS alone is not a route
        # (the reference has no 405: an unrouted method is a 404).
        unrouted = 405 if gw.profile == "spec" else 404
        assert await status_of(gw, "OPTIONS", "/apps", token) == unrouted

    gateway(scenario, settings=auth_settings("all") + CORS)


def test_rate_limit_headers_and_429(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        token = bearer("viewer")
        remaining = []
        for _ in range(6):
            async with gw.client.get(f"{API}/apps", headers=token) as resp:
                assert resp.status == 200
                assert resp.headers["X-RateLimit-Limit"] == "6"
                assert int(resp.headers["X-RateLimit-Reset"]) > 1_000_000_000  # Unix time
                remaining.append(int(resp.headers["X-RateLimit-Remaining"]))
        assert remaining == [5, 4, 3, 2, 1, 0]
        async with gw.client.get(f"{API}/apps", headers={**token, "Origin": ORIGIN}) as resp:
            assert resp.status == 429
            assert int(resp.headers["Retry-After"]) >= 1
            assert resp.headers["X-RateLimit-Remaining"] == "0"
            assert (await resp.json())["vendor_code"] == f"{gw.xv}-rate-limit-exceeded"
            assert resp.headers["Access-Control-Allow-Origin"] == ORIGIN  # the page reads it
        # Another client has its own bucket.
        assert await status_of(gw, "GET", "/apps", bearer("operator")) == 200

    gateway(scenario, settings=auth_settings("write") + LIMITS)


def test_endpoint_limit_and_preflights(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        token = bearer("configurator")
        statuses = [await status_of(gw, "GET", "/version-info", token) for _ in range(3)]
        assert statuses == [200, 200, 429]
        async with gw.client.get(f"{API}/version-info", headers=token) as resp:
            assert resp.headers["X-RateLimit-Limit"] == "2"
        assert await status_of(gw, "GET", "/apps", token) == 200  # other endpoints: client's
        for _ in range(10):  # preflights are not rate limited
            assert await status_of(gw, "OPTIONS", "/apps", {
                "Origin": ORIGIN, "Access-Control-Request-Method": "GET"}) == 204

    gateway(scenario, settings=auth_settings("write") + LIMITS)
