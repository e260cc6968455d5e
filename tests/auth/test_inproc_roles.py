"""Roles in process (the auth middleware over every route): every route of the registry,
every credential, every auth.require_auth_for mode, in both wire profiles.

The expected outcome comes from the spec's role table, written out below independently of
the registry's `role` column, so a wrong role in the registry fails here.
"""

from __future__ import annotations

import re
import time
import uuid

import jwt
import pytest

from gateway.app import build_registry
from tests.inproc.inproc_gateway import Gw, Runner

SECRET = "integration-test-secret-of-forty-bytes!!"
OTHER_SECRET = "another-secret-that-is-at-least-32-bytes"
ROLES = ("viewer", "operator", "configurator", "admin")
RANK = {role: n for n, role in enumerate(ROLES, 1)}
MODES = ("none", "write", "all")
CREDENTIALS = ("no token", *ROLES, "expired", "wrong key")


def auth_settings(mode: str) -> tuple[str, ...]:
    """An HS256 gateway with one client per role."""
    clients = ",".join(f"{r}-client:{r}-secret:{r}" for r in ROLES)
    return ("auth.enabled=true", f"auth.jwt_secret={SECRET}",
            f"auth.require_auth_for={mode}", f"auth.clients=[{clients}]")


def mint(key: str, role: str, *, exp_in_s: int = 600) -> str:
    """An access token made by hand, shaped like the gateway's own."""
    now = int(time.time())
    claims = {"iss": "diag-gateway", "sub": f"{role}-client", "role": role, "scope": role,
              "fam": uuid.uuid4().hex, "jti": uuid.uuid4().hex, "iat": now - 1200,
              "exp": now + exp_in_s}
    return jwt.encode(claims, key, algorithm="HS256", headers={"typ": "at+jwt"})


def headers() -> dict[str, dict[str, str]]:
    """The Authorization header of each credential."""
    out: dict[str, dict[str, str]] = {"no token": {}}
    for role in ROLES:
        out[role] = {"Authorization": f"Bearer {mint(SECRET, role)}"}
    out["expired"] = {"Authorization": f"Bearer {mint(SECRET, 'admin', exp_in_s=-5)}"}
    out["wrong key"] = {"Authorization": f"Bearer {mint(OTHER_SECRET, 'admin')}"}
    return out


def spec_role(method: str, path: str) -> str | None:
    """The role the spec's Authentication table gives a request (None: token endpoints)."""
    if path.startswith("/auth/"):
        return None
    if re.search(r"(^|/)x-[a-z]+-watchdog", path):  # plugin-served: admin wildcards only
        return "admin"
    if method == "GET":
        return "viewer"
    if path.endswith(("/status/shutdown", "/status/force-shutdown")):
        return "configurator"
    if path.endswith(("/status/restart", "/status/start")):
        return "operator"
    if "/configurations" in path or path.endswith("/logs/configuration"):
        return "configurator"
    if path.startswith("/updates"):
        return "configurator"
    if "/scripts" in path:
        # Runs (executions) are operator's; upload and delete of scripts configurator's.
        return "operator" if "/executions" in path else "configurator"
    # PUT data, operations, faults (clearing too), locks, subscriptions, triggers, bulk-data.
    return "operator"


def expected(mode: str, method: str, need: str | None, credential: str) -> str:
    """'allowed', '401' or '403'."""
    if mode == "none" or need is None or (mode == "write" and method == "GET"):
        return "allowed"
    if credential in ("no token", "expired", "wrong key"):
        return "401"
    return "allowed" if RANK[credential] >= RANK[need] else "403"


def concrete(path: str) -> str:
    """A request path for a route template (every parameter 'x')."""
    return re.sub(r"\{[a-z_]+\}", "x", path) if path != "/" else "/"


async def status_of(gw: Gw, method: str, path: str, hdrs: dict[str, str],
                    body: bytes | None = None) -> int:
    """Only the status of one request (the body is not read: streams end at once)."""
    async with gw.client.request(method, "/api/v1" + path, headers=hdrs, data=body) as resp:
        return resp.status


@pytest.mark.parametrize("mode", MODES)
def test_every_route_every_credential(gateway: Runner, mode: str) -> None:
    creds = headers()

    async def scenario(gw: Gw) -> None:
        routes = list(build_registry(gw.state.settings.vendor, set()))
        failures = []
        for route in routes:
            need = spec_role(route.method, route.path)
            for cred in CREDENTIALS:
                want = expected(mode, route.method, need, cred)
                hdrs = dict(creds[cred])
                body = None
                if route.method in ("POST", "PUT"):
                    hdrs["Content-Type"] = "application/json"
                    body = b"{}"
                status = await status_of(gw, route.method, concrete(route.path), hdrs, body)
                got = str(status) if status in (401, 403) else "allowed"
                if got != want:
                    failures.append(f"{route.method} {route.path} [{cred}]: expected {want}, "
                                    f"got {status} (registry role {route.role.label})")
        assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures)
        # the walk covers every served operation
        status, doc = await gw.json("GET", "/api/v1/docs", headers=creds["admin"])
        served = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
        assert served == {(r.method, r.path) for r in routes}

    gateway(scenario, settings=auth_settings(mode))


@pytest.mark.parametrize("mode", MODES)
def test_unknown_paths_do_not_leak_route_existence(gateway: Runner, mode: str) -> None:
    creds = headers()

    async def scenario(gw: Gw) -> None:
        for method, path in (("GET", "/no-such-thing"), ("POST", "/no-such-thing"),
                             ("DELETE", "/apps"), ("POST", "/health")):
            anonymous = await status_of(gw, method, path, {})
            with_token = await status_of(gw, method, path, creds["viewer"])
            needs = mode == "all" or (mode == "write" and method != "GET")
            assert anonymous == (401 if needs else with_token), (method, path, anonymous)
            assert with_token in (404, 405), (method, path, with_token)
            expired = await status_of(gw, method, path, creds["expired"])
            assert expired == (401 if needs else with_token)

    gateway(scenario, settings=auth_settings(mode))


def test_openapi_root_health_and_token_endpoints_with_auth_on(gateway: Runner) -> None:
    creds = headers()

    async def scenario(gw: Gw) -> None:
        status, doc = await gw.json("GET", "/api/v1/docs", headers=creds["viewer"])
        wrong = []
        for path, ops in doc["paths"].items():
            for method, op in ops.items():
                need = spec_role(method.upper(), path)  # None: open token endpoints
                role = op.get(f"{gw.xv}-required-role")
                if role != need or ("security" in op) != bool(need):
                    wrong.append(f"{method.upper()} {path}: {role}")
        assert not wrong, "\n".join(wrong)
        status, body = await gw.json("GET", "/api/v1/", headers=creds["viewer"])
        assert body["capabilities"]["authentication"] is True
        assert body["auth"] == {"enabled": True, "algorithm": "HS256",
                                "require_auth_for": "all"}
        assert "tls" not in body
        for role in ROLES:
            assert await status_of(gw, "GET", "/health", creds[role]) in (200, 503)
        status, body = await gw.json("POST", "/api/v1/auth/authorize", json={
            "grant_type": "client_credentials", "client_id": "viewer-client",
            "client_secret": "viewer-secret"})
        assert status == 200 and body["scope"] == "viewer"

    gateway(scenario, settings=auth_settings("all"))


def test_auth_off_serves_everything_and_names_no_roles(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, doc = await gw.json("GET", "/api/v1/docs")
        for ops in doc["paths"].values():
            for op in ops.values():
                assert f"{gw.xv}-required-role" not in op and "security" not in op
        status, root = await gw.json("GET", "/api/v1/")
        assert root["capabilities"]["authentication"] is False
        status, _ = await gw.json("PUT", "/api/v1/apps/nobody/data/x", json={})
        assert status == 404

    gateway(scenario)

