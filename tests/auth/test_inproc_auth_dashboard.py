"""Token endpoints and the dashboard in process (the auth token routes and the dashboard
routes): the grants with auth on and off in both profiles, a write needing a token and the
roles, the dashboard files."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any
from urllib.parse import urlencode

import jwt
import pytest

from tests.inproc.inproc_gateway import Gw, Runner

AUTH = ("auth.enabled=true", "auth.jwt_secret=0123456789abcdef0123456789abcdef0123",
        "auth.clients=[ops:s3cret-s3cret:operator]")
GRANT = {"grant_type": "client_credentials", "client_id": "ops",
         "client_secret": "s3cret-s3cret"}
WRITE = "/api/v1/apps/actuator/configurations/mode"


def test_token_endpoints_with_auth_off(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("POST", "/api/v1/auth/authorize", data=GRANT)
        if gw.profile == "medkit":  # the reference: no auth routes while auth is off
            assert status == 404
            assert body == {"error": "resource-not-found",
                            "error_description": "Authentication is not enabled"}
        else:
            assert status == 503
            assert body["error"] == "temporarily_unavailable"
            assert "auth.jwt_secret" in body["error_description"]
        status, _ = await gw.json("PUT", WRITE, json={"data": "manual"})
        assert status == 200  # writes are open

    gateway(scenario)


def test_a_write_needs_a_token(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", WRITE, 401, json={"data": "manual"})
        assert body["error_code"] == "unauthorized"
        assert body["message"] == "This request needs 'Authorization: Bearer <access token>'"
        status, _ = await gw.json("GET", WRITE)
        assert status == 200  # reads stay open (auth.require_auth_for=write)
        status, pair = await gw.json("POST", "/api/v1/auth/authorize", data=GRANT)
        assert status == 200, pair
        assert pair["token_type"].lower() == "bearer"
        assert pair["access_token"].count(".") == 2  # a JWT
        bearer = {"Authorization": f"Bearer {pair['access_token']}"}
        call = "/api/v1/apps/actuator/operations/calibrate/executions"
        status, body = await gw.json("POST", call, json={}, headers=bearer)
        assert status == 200 and body["parameters"]["success"] is True
        # an operator may not change configurations (configurator and above)
        body = await gw.error("PUT", WRITE, 403, json={"data": "manual"}, headers=bearer)
        assert body["error_code"] == "forbidden"
        status, body = await gw.json("GET", WRITE)
        assert body["value"] == "auto"
        status, body = await gw.json("POST", call, json={},
                                     headers={"Authorization": "Bearer not.a.token"})
        assert status == 401, body

    gateway(scenario, settings=AUTH)


def test_refresh_and_revoke(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, pair = await gw.json("POST", "/api/v1/auth/authorize", data=GRANT)
        assert status == 200 and pair["refresh_token"]
        status, fresh = await gw.json("POST", "/api/v1/auth/token", data={
            "grant_type": "refresh_token", "refresh_token": pair["refresh_token"]})
        assert status == 200, fresh
        assert fresh["refresh_token"] != pair["refresh_token"]  # rotated
        status, body = await gw.json("POST", "/api/v1/auth/token", data={
            "grant_type": "refresh_token", "refresh_token": pair["refresh_token"]})
        assert status in (400, 401) and body["error"] == "invalid_grant", body  # spent once
        status, body = await gw.json("POST", "/api/v1/auth/revoke",
                                     data={"token": fresh["refresh_token"]})
        assert (status, body) == (200, {"status": "revoked"})

    gateway(scenario, settings=AUTH)


def test_grant_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("POST", "/api/v1/auth/authorize",
                                     data={**GRANT, "client_secret": "wrong"})
        assert status == 401 and body["error"] == "invalid_client", body
        status, body = await gw.json("POST", "/api/v1/auth/authorize",
                                     data={**GRANT, "grant_type": "password"})
        assert status == 400 and body["error"] == "unsupported_grant_type"
        assert body["error_description"] == ("grant_type must be 'client_credentials' here, "
                                             "not 'password'")

    gateway(scenario, settings=AUTH)


def test_the_dashboard_page_and_files(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.get("/") as resp:
            assert resp.status == 200 and resp.content_type == "text/html"
            assert "<html" in (await resp.text()).lower()
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
            assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
            etag = resp.headers["ETag"]
        async with gw.client.get("/", headers={"If-None-Match": etag}) as resp:
            assert resp.status == 304
        async with gw.client.get("/dashboard/app.css") as resp:
            assert resp.status == 200 and resp.content_type == "text/css"
        async with gw.client.get("/dashboard/nope.js") as resp:
            assert resp.status == 404

    gateway(scenario)


def test_the_dashboard_can_be_off(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.get("/") as resp:
            assert resp.status == 404
        async with gw.client.get("/dashboard/app.css") as resp:
            assert resp.status == 404

    gateway(scenario, settings=("dashboard.enabled=false",))


# --- one client per role (the grants, refresh families, bearer checks) --------------------

SECRET = "0123456789abcdef0123456789abcdef0123"
ROLES = ("viewer", "operator", "configurator", "admin")
ROLE_AUTH = ("auth.enabled=true", f"auth.jwt_secret={SECRET}", "auth.require_auth_for=write",
             "auth.clients=[" + ",".join(f"{r}-client:{r}-secret:{r}" for r in ROLES) + "]")
OPERATOR_WRITE = "/api/v1/apps/nobody/data/x"  # an operator write; 404 past the guard
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def _mint(role: str, *, exp_in_s: int = 600, issuer: str = "diag-gateway",
          typ: str = "at+jwt") -> str:
    """An access token made by hand, shaped like the gateway's own."""
    now = int(time.time())
    claims = {"iss": issuer, "sub": f"{role}-client", "role": role, "scope": role,
              "fam": uuid.uuid4().hex, "jti": uuid.uuid4().hex, "iat": now - 1200,
              "exp": now + exp_in_s}
    return jwt.encode(claims, SECRET, algorithm="HS256", headers={"typ": typ})


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _grant(gw: Gw, role: str, **extra: str) -> dict[str, Any]:
    status, pair = await gw.json("POST", "/api/v1/auth/authorize", json={
        "grant_type": "client_credentials", "client_id": f"{role}-client",
        "client_secret": f"{role}-secret", **extra})
    assert status == 200, pair
    return dict(pair)


async def _refresh(gw: Gw, token: str) -> tuple[int, Any]:
    return await gw.json("POST", "/api/v1/auth/token",
                         json={"grant_type": "refresh_token", "refresh_token": token})


async def _write(gw: Gw, token: str) -> int:
    status, _ = await gw.json("PUT", OPERATOR_WRITE, json={}, headers=_bearer(token))
    return status


def test_client_credentials_as_json_form_and_basic(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await _grant(gw, "operator")
        assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
        assert body["scope"] == "operator" and body["refresh_token"]
        claims = jwt.decode(body["access_token"], SECRET, algorithms=["HS256"],
                            issuer="diag-gateway")
        assert claims["sub"] == "operator-client" and claims["role"] == "operator"
        assert await _write(gw, body["access_token"]) == 404
        form = urlencode({"grant_type": "client_credentials", "client_id": "viewer-client",
                          "client_secret": "viewer-secret"})
        async with gw.client.post("/api/v1/auth/authorize", data=form, headers=FORM) as resp:
            assert resp.status == 200 and (await resp.json())["scope"] == "viewer"
            assert resp.headers["Cache-Control"] == "no-store"
        basic = base64.b64encode(b"admin-client:admin-secret").decode()
        status, body = await gw.json("POST", "/api/v1/auth/authorize",
                                     data="grant_type=client_credentials",
                                     headers={**FORM, "Authorization": f"Basic {basic}"})
        assert (status, body["scope"]) == (200, "admin")

    gateway(scenario, settings=ROLE_AUTH)


def test_scope_asks_for_a_lower_role(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        pair = await _grant(gw, "admin", scope="viewer")
        assert pair["scope"] == "viewer"
        assert await _write(gw, pair["access_token"]) == 403
        status, body = await gw.json("POST", "/api/v1/auth/authorize", json={
            "grant_type": "client_credentials", "client_id": "viewer-client",
            "client_secret": "viewer-secret", "scope": "admin"})
        assert (status, body["error"]) == (400, "invalid_scope")

    gateway(scenario, settings=ROLE_AUTH)


@pytest.mark.parametrize(("body", "status", "error"), [
    ({"grant_type": "client_credentials", "client_id": "viewer-client",
      "client_secret": "wrong"}, 401, "invalid_client"),
    ({"grant_type": "client_credentials", "client_id": "nobody", "client_secret": "x"},
     401, "invalid_client"),
    ({"grant_type": "client_credentials", "client_id": "viewer-client"}, 400,
     "invalid_request"),
    ({"grant_type": "password", "client_id": "a", "client_secret": "b"}, 400,
     "unsupported_grant_type"),
    ({}, 400, "invalid_request"),
])
def test_authorize_errors_are_oauth2_shaped(gateway: Runner, body: dict[str, str],
                                            status: int, error: str) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.post("/api/v1/auth/authorize", json=body) as resp:
            out = await resp.json()
            assert resp.status == status, out
            assert set(out) == {"error", "error_description"} and out["error"] == error
            if status == 401:
                assert resp.headers["WWW-Authenticate"].startswith("Basic")

    gateway(scenario, settings=ROLE_AUTH)


def test_token_and_revoke_errors_are_oauth2_shaped(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await _refresh(gw, "never-issued")
        assert (status, body["error"]) == (400, "invalid_grant")
        status, body = await gw.json("POST", "/api/v1/auth/token",
                                     json={"grant_type": "client_credentials"})
        assert (status, body["error"]) == (400, "unsupported_grant_type")
        status, body = await gw.json("POST", "/api/v1/auth/revoke", json={})
        assert (status, body["error"]) == (400, "invalid_request")
        status, body = await gw.json("POST", "/api/v1/auth/authorize", data=b"<xml/>",
                                     headers={"Content-Type": "text/xml"})
        assert (status, body["error"]) == (400, "invalid_request")

    gateway(scenario, settings=ROLE_AUTH)


def test_a_reused_refresh_token_revokes_its_family(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        first = await _grant(gw, "operator")
        status, second = await _refresh(gw, first["refresh_token"])
        assert status == 200 and second["refresh_token"] != first["refresh_token"]
        assert second["access_token"] != first["access_token"]
        assert await _write(gw, second["access_token"]) == 404
        # the spent token comes back (a stolen copy): refused, and the whole family dies
        status, body = await _refresh(gw, first["refresh_token"])
        assert (status, body["error"]) == (400, "invalid_grant")
        assert "family" in body["error_description"]
        status, body = await _refresh(gw, second["refresh_token"])
        assert (status, body["error"]) == (400, "invalid_grant")
        assert await _write(gw, second["access_token"]) == 401
        assert await _write(gw, first["access_token"]) == 401
        other = await _grant(gw, "operator")  # other families are untouched
        assert await _write(gw, other["access_token"]) == 404

    gateway(scenario, settings=ROLE_AUTH)


def test_revoke(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        pair = await _grant(gw, "configurator")
        status, body = await gw.json("POST", "/api/v1/auth/revoke",
                                     json={"token": pair["refresh_token"]})
        assert (status, body) == (200, {"status": "revoked"})
        status, body = await _refresh(gw, pair["refresh_token"])
        assert (status, body["error"]) == (400, "invalid_grant")
        assert await _write(gw, pair["access_token"]) == 401
        # unknown tokens are accepted silently (RFC 7009), form-encoded too
        status, _ = await gw.json("POST", "/api/v1/auth/revoke", data="token=unknown",
                                  headers=FORM)
        assert status == 200
        # an access token sent there revokes nothing: its refresh token and itself still work
        pair = await _grant(gw, "operator")
        status, _ = await gw.json("POST", "/api/v1/auth/revoke",
                                  json={"token": pair["access_token"]})
        assert status == 200
        assert await _write(gw, pair["access_token"]) == 404
        assert (await _refresh(gw, pair["refresh_token"]))[0] == 200

    gateway(scenario, settings=ROLE_AUTH)


def test_bearer_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for header in ({}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer"},
                       _bearer("not.a.jwt"), _bearer(_mint("admin", exp_in_s=-1)),
                       _bearer(_mint("admin", issuer="someone-else")),
                       _bearer(_mint("admin", typ="JWT"))):
            async with gw.client.put(OPERATOR_WRITE, json={}, headers=header) as resp:
                assert resp.status == 401, header
                assert resp.headers["WWW-Authenticate"].startswith("Bearer")
                assert (await resp.json())["error_code"] == "unauthorized"
        body = await gw.error("PUT", OPERATOR_WRITE, 403, json={},
                              headers=_bearer(_mint("viewer")))
        assert body["parameters"]["required_role"] == "operator"
        # write mode: reads are open and a bad token on a read is ignored
        status, _ = await gw.json("GET", "/api/v1/apps", headers=_bearer("garbage"))
        assert status == 200

    gateway(scenario, settings=ROLE_AUTH)


def test_a_form_grant_without_a_client_with_auth_off(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json(
            "POST", "/api/v1/auth/authorize", data=b"grant_type=client_credentials",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        if gw.profile == "medkit":
            assert status == 404
            assert body == {"error": "resource-not-found",
                            "error_description": "Authentication is not enabled"}
        else:  # available (spec), answering in the OAuth2 shape
            assert status == 400 and body["error"] == "invalid_request"

    gateway(scenario)
