"""Every route of the registry, every credential, every auth.require_auth_for mode.

The expected outcome comes from the spec's role table, written out below independently of
the registry's `role` column, so a wrong role in the registry fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from gateway.app import build_registry
from gateway.http.routes import Route
from tests.conftest import free_port
from tests.integration.test_security_helpers import (
    OTHER_SECRET,
    ROLES,
    SECRET,
    SecureGateway,
    auth_settings,
    bearer,
    mint,
)

pytestmark = pytest.mark.integration

RANK = {role: n for n, role in enumerate(ROLES, 1)}
MODES = ("none", "write", "all")
CREDENTIALS = ("no token", *ROLES, "expired", "wrong key")


def spec_role(method: str, path: str) -> str | None:
    """The role the spec's Authentication table gives a request (None: token endpoints)."""
    if path.startswith("/auth/"):
        return None
    if re.search(r"(^|/)x-vendor-watchdog", path):  # plugin-served: admin wildcards only
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


def outcome(status: int) -> str:
    return str(status) if status in (401, 403) else "allowed"


ROUTES: list[Route] = list(build_registry("vendor", set()))


@pytest.fixture(scope="module")
def headers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {"no token": {}}
    for role in ROLES:
        out[role] = bearer(mint(SECRET, role))
    out["expired"] = bearer(mint(SECRET, "admin", exp_in_s=-5))
    out["wrong key"] = bearer(mint(OTHER_SECRET, "admin"))
    return out


@pytest.fixture(scope="module", params=MODES)
def gw(request: pytest.FixtureRequest, domain: int,
       tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureGateway]:
    d = tmp_path_factory.mktemp(f"roles-{request.param}")
    g = SecureGateway(free_port(), domain, auth_settings(d, request.param), d / "gw.log")
    with g:
        g.mode = request.param  # type: ignore[attr-defined]
        yield g


def _walk(gw: SecureGateway, headers: dict[str, dict[str, str]]) -> list[str]:
    mode = gw.mode  # type: ignore[attr-defined]
    cases = []
    for route in ROUTES:
        need = spec_role(route.method, route.path)
        for cred in CREDENTIALS:
            cases.append((route, cred, expected(mode, route.method, need, cred)))

    def run(case: tuple[Route, str, str]) -> str | None:
        route, cred, want = case
        hdrs = dict(headers[cred])
        body = None
        if route.method in ("POST", "PUT"):
            hdrs["Content-Type"] = "application/json"
            body = b"{}"
        status = gw.status(route.method, concrete(route.path), hdrs, body)
        got = outcome(status)
        if got != want:
            return (f"{route.method} {route.path} [{cred}]: expected {want}, got {status} "
                    f"(registry role {route.role.label})")
        return None

    with ThreadPoolExecutor(8) as pool:
        return [f for f in pool.map(run, cases) if f]


def test_every_route_every_credential(gw: SecureGateway,
                                      headers: dict[str, dict[str, str]]) -> None:
    failures = _walk(gw, headers)
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures)


def test_walk_covers_every_served_operation(gw: SecureGateway,
                                            headers: dict[str, dict[str, str]]) -> None:
    doc = gw.request("GET", "/docs", headers=headers["admin"]).json()
    served = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert served == {(r.method, r.path) for r in ROUTES}


def test_unknown_paths_do_not_leak_route_existence(gw: SecureGateway,
                                                   headers: dict[str, dict[str, str]]) -> None:
    mode = gw.mode  # type: ignore[attr-defined]
    cases = [("GET", "/no-such-thing"), ("POST", "/no-such-thing"), ("DELETE", "/apps"),
             ("POST", "/health")]
    for method, path in cases:
        anonymous = gw.status(method, path)
        with_token = gw.status(method, path, headers["viewer"])
        needs = mode == "all" or (mode == "write" and method != "GET")
        assert anonymous == (401 if needs else with_token), (method, path, anonymous)
        assert with_token in (404, 405), (method, path, with_token)
        assert gw.status(method, path, headers["expired"]) == (401 if needs else with_token)


def test_openapi_names_each_operations_role(gw: SecureGateway,
                                            headers: dict[str, dict[str, str]]) -> None:
    doc = gw.request("GET", "/docs", headers=headers["viewer"]).json()
    wrong = []
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            need = spec_role(method.upper(), path)  # None: open token endpoints
            if op.get("x-vendor-required-role") != need or ("security" in op) != bool(need):
                wrong.append(f"{method.upper()} {path}: {op.get('x-vendor-required-role')}")
    assert not wrong, "\n".join(wrong)


def test_root_announces_auth(gw: SecureGateway, headers: dict[str, dict[str, str]]) -> None:
    body = gw.request("GET", "/", headers=headers["viewer"]).json()
    assert body["capabilities"]["authentication"] is True
    assert body["auth"] == {"enabled": True, "algorithm": "HS256",
                            "require_auth_for": gw.mode}  # type: ignore[attr-defined]
    assert "tls" not in body


def test_health_is_readable_by_every_role(gw: SecureGateway,
                                          headers: dict[str, dict[str, str]]) -> None:
    for role in ROLES:
        assert gw.status("GET", "/health", headers[role]) in (200, 503)


def test_auth_endpoints_are_open(gw: SecureGateway) -> None:
    resp = gw.request("POST", "/auth/authorize", body={
        "grant_type": "client_credentials", "client_id": "viewer-client",
        "client_secret": "viewer-secret"})
    assert resp.status == 200 and resp.json()["scope"] == "viewer"
