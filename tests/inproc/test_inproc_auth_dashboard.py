"""Token endpoints and the dashboard in process (the auth token routes and the dashboard
routes): the grants with auth on and off in both profiles, a write needing a token and the
roles, the dashboard files."""

from __future__ import annotations

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
