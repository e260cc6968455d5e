"""Enforcement in-process: a small registry behind the real middleware, guard and auth."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.auth import enforce
from gateway.auth import routes as auth_routes
from gateway.auth.tokens import OAuthError
from gateway.http.jsonutil import json_response
from gateway.http.middleware import make_middleware
from gateway.http.routes import Registry, Route
from gateway.http.state import STATE, GatewayState
from gateway.model.roles import Role
from gateway.settings import config

SECRET = "u" * 32
CLIENTS = "[v:vs:viewer,o:os:operator,c:cs:configurator,a:as:admin]"


async def ok(request: web.Request) -> web.Response:
    return json_response({"ok": True})


def build(tmp_path: Path, mode: str, *extra: str,
          before: list[Any] | None = None) -> web.Application:
    settings = config.load(None, ["auth.enabled=true", f"auth.jwt_secret={SECRET}",
                                  f"auth.require_auth_for={mode}", f"auth.clients={CLIENTS}",
                                  f"state_dir={tmp_path}", *extra])
    reg = Registry("vendor")
    reg.add("GET", "/things", ok)
    reg.add("PUT", "/things/{thing_id}", ok, role=Role.OPERATOR)
    reg.add("POST", "/settings", ok, role=Role.CONFIGURATOR)
    reg.add("GET", "/x-vendor-watchdog", ok, extra={"plugin": "watchdog"})
    reg.add("DELETE", "/rowless", ok, role=None)  # type: ignore[arg-type]
    auth_routes.register(reg)
    state = GatewayState(settings=settings, registry=reg)
    app = web.Application()
    app[STATE] = state
    state.route_table = reg.install(app)
    app.middlewares.append(make_middleware(state))
    for check in before or ():
        state.guard.add(check)
    enforce.install(app, state)
    return app


def token(role: str, *, exp_in: int = 60, key: str = SECRET) -> dict[str, str]:
    now = int(time.time())
    raw = jwt.encode({"iss": "diag-gateway", "sub": role, "role": role, "fam": "f-" + role,
                      "jti": "j", "iat": now, "exp": now + exp_in}, key, algorithm="HS256",
                     headers={"typ": "at+jwt"})
    return {"Authorization": f"Bearer {raw}"}


Calls = list[tuple[str, str, dict[str, str]]]


def statuses(app: web.Application, calls: Calls) -> list[int]:
    async def go() -> list[int]:
        async with TestClient(TestServer(app)) as client:
            out = []
            for method, path, headers in calls:
                async with client.request(method, "/api/v1" + path, headers=headers) as r:
                    await r.read()
                    out.append(r.status)
            return out

    return asyncio.run(go())


def test_all_mode(tmp_path: Path) -> None:
    app = build(tmp_path, "all")
    got = statuses(app, [
        ("GET", "/things", {}),
        ("GET", "/things", token("viewer")),
        ("GET", "/things", token("viewer", exp_in=-1)),
        ("GET", "/things", token("admin", key="w" * 32)),
        ("PUT", "/things/1", token("viewer")),
        ("PUT", "/things/1", token("operator")),
        ("POST", "/settings", token("operator")),
        ("POST", "/settings", token("configurator")),
        ("GET", "/x-vendor-watchdog", token("configurator")),
        ("GET", "/x-vendor-watchdog", token("admin")),
        ("DELETE", "/rowless", token("admin")),
        ("GET", "/unknown", {}),
        ("GET", "/unknown", token("viewer")),
        ("POST", "/things", {}),
        ("POST", "/things", token("viewer")),
        ("GET", "/outside-the-api", {}),
    ])
    assert got == [401, 200, 401, 401, 403, 200, 403, 200, 403, 200, 403, 401, 404, 401, 405,
                   401]


def test_write_mode(tmp_path: Path) -> None:
    app = build(tmp_path, "write")
    got = statuses(app, [
        ("GET", "/things", {}),
        ("GET", "/things", {"Authorization": "Bearer garbage"}),
        ("GET", "/x-vendor-watchdog", {}),
        ("PUT", "/things/1", {}),
        ("PUT", "/things/1", {"Authorization": "Bearer garbage"}),
        ("PUT", "/things/1", token("operator")),
        ("DELETE", "/rowless", token("admin")),
        ("POST", "/unknown", {}),
        ("POST", "/unknown", token("viewer")),
        ("GET", "/unknown", {}),
    ])
    assert got == [200, 200, 200, 401, 401, 200, 403, 401, 404, 404]


def test_none_mode_checks_nothing(tmp_path: Path) -> None:
    app = build(tmp_path, "none")
    got = statuses(app, [("PUT", "/things/1", {}), ("POST", "/settings", {}),
                         ("POST", "/unknown", {})])
    assert got == [200, 200, 404]
    assert "auth" in app[STATE].features


def test_auth_check_runs_before_other_checks(tmp_path: Path) -> None:
    seen: list[str] = []

    async def lock_check(request: web.Request, route: Route) -> None:
        seen.append(route.path)

    app = build(tmp_path, "all", before=[lock_check])
    got = statuses(app, [("GET", "/things", {}), ("GET", "/things", token("admin", exp_in=-1)),
                         ("GET", "/things", token("viewer"))])
    assert got == [401, 401, 200]
    assert seen == ["/things"]  # only the authenticated request reached the later check


def test_error_bodies_and_challenges(tmp_path: Path) -> None:
    app = build(tmp_path, "all")

    async def go() -> list[tuple[int, dict[str, Any], str]]:
        async with TestClient(TestServer(app)) as client:
            out = []
            for headers, method in (({}, "GET"), (token("viewer"), "PUT")):
                async with client.request(method, "/api/v1/things/1" if method == "PUT"
                                          else "/api/v1/things", headers=headers) as r:
                    out.append((r.status, await r.json(), r.headers["WWW-Authenticate"]))
            return out

    (s1, b1, h1), (s2, b2, h2) = asyncio.run(go())
    assert s1 == 401 and b1["error_code"] == "unauthorized" and h1.startswith("Bearer realm=")
    assert s2 == 403 and b2["error_code"] == "forbidden"
    assert b2["parameters"] == {"status": 403, "required_role": "operator", "role": "viewer"}
    assert 'error="insufficient_scope"' in h2


def test_revoked_family_is_refused_at_once(tmp_path: Path) -> None:
    app = build(tmp_path, "all")

    async def go() -> list[int]:
        async with TestClient(TestServer(app)) as client:
            async def post(path: str, body: dict[str, str]) -> dict[str, Any]:
                async with client.post("/api/v1" + path, json=body) as r:
                    return await r.json()  # type: ignore[no-any-return]

            pair = await post("/auth/authorize", {"grant_type": "client_credentials",
                                                  "client_id": "o", "client_secret": "os"})
            bearer = {"Authorization": f"Bearer {pair['access_token']}"}
            out = []
            async with client.get("/api/v1/things", headers=bearer) as r:
                out.append(r.status)  # now cached as valid
            await post("/auth/revoke", {"token": pair["refresh_token"]})
            async with client.get("/api/v1/things", headers=bearer) as r:
                out.append(r.status)
            return out

    assert asyncio.run(go()) == [200, 401]


def test_plugin_routes_need_admin_whatever_they_declare() -> None:
    route = Route("GET", "/x", ok, Role.VIEWER, "", extra={"plugin": "p"})
    assert enforce.required_role(route) is Role.ADMIN
    assert enforce.required_role(Route("PUT", "/y", ok, Role.OPERATOR, "")) is Role.OPERATOR
    assert enforce.required_role(Route("PUT", "/y", ok, None, "")) is None  # type: ignore[arg-type]


# --- request parsing of the token endpoints -----------------------------------------------

def test_parse_params() -> None:
    parse = auth_routes.parse_params
    assert parse("application/json", b'{"a": "1"}') == {"a": "1"}
    assert parse("application/x-www-form-urlencoded", b"a=1&b=x%3Ay") == {"a": "1", "b": "x:y"}
    assert parse("application/octet-stream", b"") == {}
    for ctype, raw in (("application/json", b"[1]"), ("application/json", b'{"a": 1}'),
                       ("application/json", b"{"), ("application/x-www-form-urlencoded",
                                                     b"a=1&a=2"), ("text/plain", b"a=1"),
                       ("application/json", b"{}" + b" " * auth_routes.MAX_BODY_BYTES)):
        with pytest.raises(OAuthError) as exc:
            parse(ctype, raw)
        assert exc.value.error == "invalid_request"


def test_basic_credentials() -> None:
    enc = base64.b64encode(b"id%3Ax:s%C3%A9cret").decode()
    assert auth_routes.basic_credentials(f"Basic {enc}") == ("id:x", "s\u00e9cret")
    assert auth_routes.basic_credentials("Bearer x") is None
    assert auth_routes.basic_credentials(None) is None
    with pytest.raises(OAuthError):
        auth_routes.basic_credentials("Basic !!!")


