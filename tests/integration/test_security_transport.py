"""TLS versions and mutual TLS against real listeners (CORS and rate limits: in process, in
tests/http/test_inproc_http_guards.py)."""

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
    Pki,
    SecureGateway,
    client_context,
    make_pki,
)

pytestmark = pytest.mark.integration

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
