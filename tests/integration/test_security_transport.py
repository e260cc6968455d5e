"""TLS versions, mutual TLS, CORS preflights and rate limits against real gateways."""

from __future__ import annotations

import http.client
import socket
import ssl
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.integration.test_security_helpers import (
    SECRET,
    Pki,
    SecureGateway,
    auth_settings,
    bearer,
    client_context,
    make_pki,
    mint,
)

pytestmark = pytest.mark.integration

ORIGIN = "http://dashboard.example:3000"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls_settings(pki: Pki, state_dir: Path, *extra: str) -> list[str]:
    return ["server.tls.enabled=true", f"server.tls.cert_file={pki.server_cert}",
            f"server.tls.key_file={pki.server_key}", f"state_dir={state_dir}", *extra]


def handshake(port: int, ctx: ssl.SSLContext) -> str:
    """The TLS version negotiated, after one HTTP exchange over it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"GET /api/v1/version-info HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Connection: close\r\n\r\n")
        head = tls.recv(12)
        if not head.startswith(b"HTTP/1.1 200"):
            raise ConnectionError(f"no HTTP answer over TLS: {head!r}")
        return str(tls.version())


@pytest.fixture(scope="module")
def tls_gw(pki: Pki, domain: int,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureGateway]:
    d = tmp_path_factory.mktemp("tls")
    with SecureGateway(free_port(), domain, tls_settings(pki, d), d / "gw.log",
                       ssl_context=client_context(pki)) as g:
        yield g


def test_tls_1_2_and_1_3_are_accepted(tls_gw: SecureGateway, pki: Pki) -> None:
    assert handshake(tls_gw.port, client_context(pki, max_version=ssl.TLSVersion.TLSv1_2)) \
        == "TLSv1.2"
    assert handshake(tls_gw.port, client_context(pki)) == "TLSv1.3"
    root = tls_gw.get("/").json()
    assert root["tls"] == {"enabled": True, "min_version": "1.2"}
    assert root["capabilities"]["tls"] is True
    assert "auth" not in root


def test_tls_1_1_is_refused_by_the_server(tls_gw: SecureGateway) -> None:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLSVersion.TLSv1_1 is deprecated
        ctx.minimum_version = ssl.TLSVersion.TLSv1_1
        ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # else the client itself would not offer TLS 1.1
    with pytest.raises(ssl.SSLError) as exc:
        handshake(tls_gw.port, ctx)
    # The client did offer TLS 1.1 (no local refusal); the server ended the handshake.
    assert "NO_PROTOCOLS_AVAILABLE" not in str(exc.value)


def test_plain_http_on_the_tls_port_gets_no_answer(tls_gw: SecureGateway) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", tls_gw.port, timeout=10)
    try:
        conn.request("GET", "/api/v1/health")
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException):
        status = None
    finally:
        conn.close()
    assert status in (None, 400)


def test_mutual_tls(pki: Pki, domain: int, tmp_path: Path) -> None:
    settings = tls_settings(pki, tmp_path, f"server.tls.client_ca_file={pki.ca}")
    with SecureGateway(free_port(), domain, settings, tmp_path / "gw.log",
                       ssl_context=client_context(pki, cert=True)) as gw:
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            assert handshake(gw.port, client_context(pki, cert=True, max_version=version))
            for ctx in (client_context(pki, max_version=version),
                        client_context(pki, rogue=True, max_version=version)):
                with pytest.raises((ssl.SSLError, ConnectionError)):
                    handshake(gw.port, ctx)


# --- CORS ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cors_gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureGateway]:
    d = tmp_path_factory.mktemp("cors")
    settings = auth_settings(d, "all", f"cors.allowed_origins=['{ORIGIN}']",
                             "cors.allow_credentials=true", "cors.max_age_seconds=120")
    with SecureGateway(free_port(), domain, settings, d / "gw.log") as g:
        yield g


def test_cors_preflight_is_answered_before_auth(cors_gw: SecureGateway) -> None:
    # What a browser sends before a cross-origin PUT with a bearer token.
    resp = cors_gw.request("OPTIONS", "/apps/x/data/y", headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "authorization,content-type,x-client-id",
        "Sec-Fetch-Mode": "cors", "Referer": ORIGIN + "/"})
    assert resp.status == 204, resp
    h = resp.headers
    assert h["access-control-allow-origin"] == ORIGIN
    assert h["access-control-allow-credentials"] == "true"
    assert "PUT" in h["access-control-allow-methods"]
    allowed = {x.strip().lower() for x in h["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "x-client-id", "x-vendor-no-fan-out"} <= allowed
    assert h["access-control-max-age"] == "120"
    assert "Origin" in h["vary"]


def test_cors_refuses_foreign_origins_methods_and_headers(cors_gw: SecureGateway) -> None:
    for headers in ({"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"},
                    {"Origin": ORIGIN, "Access-Control-Request-Method": "PATCH"},
                    {"Origin": ORIGIN, "Access-Control-Request-Method": "GET",
                     "Access-Control-Request-Headers": "x-secret-header"}):
        resp = cors_gw.request("OPTIONS", "/apps", headers=headers)
        assert resp.status == 403, headers
        assert "access-control-allow-origin" not in resp.headers


def test_cors_headers_on_answers_and_errors(cors_gw: SecureGateway) -> None:
    token = mint(SECRET, "viewer")
    resp = cors_gw.request("GET", "/apps", headers={"Origin": ORIGIN, **bearer(token)})
    assert resp.status == 200
    assert resp.headers["access-control-allow-origin"] == ORIGIN
    exposed = resp.headers["access-control-expose-headers"]
    assert "Content-Disposition" in exposed and "Retry-After" in exposed
    # A 401 is readable by the page too (so it can ask for a token).
    resp = cors_gw.request("GET", "/apps", headers={"Origin": ORIGIN})
    assert resp.status == 401 and resp.headers["access-control-allow-origin"] == ORIGIN
    resp = cors_gw.request("GET", "/apps", headers={"Origin": "http://evil.example",
                                                    **bearer(token)})
    assert resp.status == 200 and "access-control-allow-origin" not in resp.headers
    # Without an allowed preflight nothing is granted: OPTIONS alone is not a route.
    assert cors_gw.status("OPTIONS", "/apps", bearer(token)) == 405


# --- rate limiting ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def limited(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureGateway]:
    d = tmp_path_factory.mktemp("limits")
    settings = auth_settings(d, "write", "rate_limiting.enabled=true",
                             "rate_limiting.client_requests_per_minute=6",
                             "rate_limiting.global_requests_per_minute=1000",
                             "rate_limiting.endpoint_limits=['GET /version-info:2']",
                             f"cors.allowed_origins=['{ORIGIN}']")
    with SecureGateway(free_port(), domain, settings, d / "gw.log") as g:
        yield g


def test_rate_limit_headers_and_429(limited: SecureGateway) -> None:
    token = bearer(mint(SECRET, "viewer"))  # its own client bucket (token subject)
    remaining = []
    for _ in range(6):
        resp = limited.request("GET", "/apps", headers=token)
        assert resp.status == 200
        assert resp.headers["x-ratelimit-limit"] == "6"
        assert int(resp.headers["x-ratelimit-reset"]) > 1_000_000_000  # Unix time
        remaining.append(int(resp.headers["x-ratelimit-remaining"]))
    assert remaining == [5, 4, 3, 2, 1, 0]
    resp = limited.request("GET", "/apps", headers={**token, "Origin": ORIGIN})
    assert resp.status == 429
    assert int(resp.headers["retry-after"]) >= 1
    assert resp.headers["x-ratelimit-remaining"] == "0"
    assert resp.json()["vendor_code"] == "x-vendor-rate-limit-exceeded"
    assert resp.headers["access-control-allow-origin"] == ORIGIN  # the page can read it
    # Another client has its own bucket.
    other = bearer(mint(SECRET, "operator"))
    assert limited.request("GET", "/apps", headers=other).status == 200


def test_endpoint_limit(limited: SecureGateway) -> None:
    token = bearer(mint(SECRET, "configurator"))
    statuses = [limited.status("GET", "/version-info", token) for _ in range(3)]
    assert statuses == [200, 200, 429]
    resp = limited.request("GET", "/version-info", headers=token)
    assert resp.headers["x-ratelimit-limit"] == "2"
    assert limited.status("GET", "/apps", token) == 200  # other endpoints: client bucket


def test_preflights_are_not_rate_limited(limited: SecureGateway) -> None:
    for _ in range(10):
        assert limited.status("OPTIONS", "/apps", {
            "Origin": ORIGIN, "Access-Control-Request-Method": "GET"}) == 204


# --- auth off -----------------------------------------------------------------------------

def test_auth_off_serves_everything_and_names_no_roles(tls_gw: SecureGateway) -> None:
    doc = tls_gw.get("/docs").json()
    for ops in doc["paths"].values():
        for op in ops.values():
            assert "x-vendor-required-role" not in op and "security" not in op
    assert tls_gw.get("/").json()["capabilities"]["authentication"] is False
    assert tls_gw.request("PUT", "/apps/nobody/data/x", body={}).status == 404
    # Token management stays available; with no key configured it says so.
    resp = tls_gw.request("POST", "/auth/authorize", body={
        "grant_type": "client_credentials", "client_id": "a", "client_secret": "b"})
    assert resp.status == 503 and resp.json()["error"] == "temporarily_unavailable"
