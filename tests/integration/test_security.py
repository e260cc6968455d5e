"""Tokens, refresh rotation, restart persistence, RS256, CORS, rate limits: real gateways."""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import jwt
import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import ROOT
from tests.integration.test_security_helpers import (
    CLIENTS,
    SECRET,
    SecureGateway,
    auth_settings,
    bearer,
    forge_hs256,
    mint,
    write_rsa_keys,
)

pytestmark = pytest.mark.integration

WRITE = ("PUT", "/apps/nobody/data/x")  # an operator write; 404 past the guard


def refresh(gw: SecureGateway, token: str) -> tuple[int, dict]:
    resp = gw.request("POST", "/auth/token",
                      body={"grant_type": "refresh_token", "refresh_token": token})
    return resp.status, resp.json()


def write_status(gw: SecureGateway, token: str) -> int:
    return gw.status(*WRITE, headers={**bearer(token), "Content-Type": "application/json"},
                     body=b"{}")


@pytest.fixture(scope="module")
def hs(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureGateway]:
    d = tmp_path_factory.mktemp("hs")
    with SecureGateway(free_port(), domain, auth_settings(d, "write"), d / "gw.log") as g:
        yield g


# --- token endpoints ----------------------------------------------------------------------

def test_client_credentials_json_form_and_basic(hs: SecureGateway) -> None:
    body = hs.token("operator-client", "operator-secret")
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
    assert body["scope"] == "operator" and body["refresh_token"]
    claims = jwt.decode(body["access_token"], SECRET, algorithms=["HS256"],
                        issuer="diag-gateway")
    assert claims["sub"] == "operator-client" and claims["role"] == "operator"
    assert write_status(hs, body["access_token"]) == 404

    form = urlencode({"grant_type": "client_credentials", "client_id": "viewer-client",
                      "client_secret": "viewer-secret"}).encode()
    resp = hs.request("POST", "/auth/authorize", raw=form,
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status == 200 and resp.json()["scope"] == "viewer"
    assert resp.headers["cache-control"] == "no-store"

    basic = base64.b64encode(b"admin-client:admin-secret").decode()
    resp = hs.request("POST", "/auth/authorize", raw=b"grant_type=client_credentials",
                      headers={"Authorization": f"Basic {basic}",
                               "Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status == 200 and resp.json()["scope"] == "admin"


def test_scope_asks_for_a_lower_role(hs: SecureGateway) -> None:
    resp = hs.request("POST", "/auth/authorize", body={
        "grant_type": "client_credentials", "client_id": "admin-client",
        "client_secret": "admin-secret", "scope": "viewer"})
    assert resp.status == 200 and resp.json()["scope"] == "viewer"
    assert write_status(hs, resp.json()["access_token"]) == 403
    resp = hs.request("POST", "/auth/authorize", body={
        "grant_type": "client_credentials", "client_id": "viewer-client",
        "client_secret": "viewer-secret", "scope": "admin"})
    assert resp.status == 400 and resp.json()["error"] == "invalid_scope"


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
def test_authorize_errors_are_oauth2_shaped(hs: SecureGateway, body: dict, status: int,
                                            error: str) -> None:
    resp = hs.request("POST", "/auth/authorize", body=body)
    assert resp.status == status
    out = resp.json()
    assert set(out) == {"error", "error_description"} and out["error"] == error
    if status == 401:
        assert resp.headers["www-authenticate"].startswith("Basic")


def test_token_and_revoke_errors_are_oauth2_shaped(hs: SecureGateway) -> None:
    status, body = refresh(hs, "never-issued")
    assert status == 400 and body["error"] == "invalid_grant"
    resp = hs.request("POST", "/auth/token", body={"grant_type": "client_credentials"})
    assert resp.status == 400 and resp.json()["error"] == "unsupported_grant_type"
    resp = hs.request("POST", "/auth/revoke", body={})
    assert resp.status == 400 and resp.json()["error"] == "invalid_request"
    resp = hs.request("POST", "/auth/authorize", raw=b"<xml/>",
                      headers={"Content-Type": "text/xml"})
    assert resp.status == 400 and resp.json()["error"] == "invalid_request"


def test_refresh_rotates_and_a_reused_token_revokes_its_family(hs: SecureGateway) -> None:
    first = hs.token("operator-client", "operator-secret")
    status, second = refresh(hs, first["refresh_token"])
    assert status == 200 and second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    assert write_status(hs, second["access_token"]) == 404

    # The spent token comes back (stolen copy): refused, and the whole family dies.
    status, body = refresh(hs, first["refresh_token"])
    assert status == 400 and body["error"] == "invalid_grant"
    assert "family" in body["error_description"]
    status, body = refresh(hs, second["refresh_token"])
    assert status == 400 and body["error"] == "invalid_grant"
    assert write_status(hs, second["access_token"]) == 401
    assert write_status(hs, first["access_token"]) == 401
    # Other families are untouched.
    other = hs.token("operator-client", "operator-secret")
    assert write_status(hs, other["access_token"]) == 404


def test_revoke(hs: SecureGateway) -> None:
    pair = hs.token("configurator-client", "configurator-secret")
    resp = hs.request("POST", "/auth/revoke", body={"token": pair["refresh_token"]})
    assert resp.status == 200 and resp.json() == {"status": "revoked"}
    status, body = refresh(hs, pair["refresh_token"])
    assert status == 400 and body["error"] == "invalid_grant"
    assert write_status(hs, pair["access_token"]) == 401
    # Unknown tokens are accepted silently (RFC 7009), form-encoded too.
    resp = hs.request("POST", "/auth/revoke", raw=b"token=unknown",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status == 200
    # An access token sent there revokes nothing: its refresh token and itself still work.
    pair = hs.token("operator-client", "operator-secret")
    assert hs.request("POST", "/auth/revoke", body={"token": pair["access_token"]}).status == 200
    assert write_status(hs, pair["access_token"]) != 401
    assert refresh(hs, pair["refresh_token"])[0] == 200


def test_bearer_errors(hs: SecureGateway) -> None:
    for header in ({}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer"},
                   bearer("not.a.jwt"), bearer(mint(SECRET, "admin", exp_in_s=-1)),
                   bearer(mint(SECRET, "admin", issuer="someone-else")),
                   bearer(mint(SECRET, "admin", typ="JWT"))):
        resp = hs.request(*WRITE, body={}, headers=header)
        assert resp.status == 401, (header, resp)
        assert resp.headers["www-authenticate"].startswith("Bearer")
        assert resp.json()["error_code"] == "unauthorized"
    resp = hs.request(*WRITE, body={}, headers=bearer(mint(SECRET, "viewer")))
    assert resp.status == 403
    assert resp.json()["parameters"]["required_role"] == "operator"
    # write mode: reads are open and a bad token on a read is ignored.
    assert hs.status("GET", "/apps", bearer("garbage")) == 200


def test_secrets_never_reach_the_log(hs: SecureGateway) -> None:
    hs.token("admin-client", "admin-secret")
    assert hs.log_path is not None
    text = hs.log_path.read_text(errors="replace")
    assert SECRET not in text
    assert all(entry.split(":")[1] not in text for entry in CLIENTS)


def test_refresh_tokens_are_stored_hashed(hs: SecureGateway) -> None:
    pair = hs.token("viewer-client", "viewer-secret")
    assert hs.log_path is not None
    store = hs.log_path.parent / "auth" / "refresh_tokens.sqlite3"
    data = store.read_bytes()
    assert pair["refresh_token"].encode() not in data
    assert store.stat().st_mode & 0o077 == 0


# --- restart persistence ------------------------------------------------------------------

def test_refresh_state_survives_a_restart(domain: int, tmp_path: Path) -> None:
    settings = auth_settings(tmp_path, "all")
    port = free_port()
    with SecureGateway(port, domain, settings, tmp_path / "gw.log") as gw:
        live = gw.token("operator-client", "operator-secret")
        spent = gw.token("operator-client", "operator-secret")
        status, rotated = refresh(gw, spent["refresh_token"])
        assert status == 200
        revoked = gw.token("operator-client", "operator-secret")
        assert gw.request("POST", "/auth/revoke",
                          body={"token": revoked["refresh_token"]}).status == 200
    with SecureGateway(port, domain, settings, tmp_path / "gw.log") as gw:
        # An unused refresh token from before the restart still works, once.
        status, body = refresh(gw, live["refresh_token"])
        assert status == 200 and gw.status("GET", "/apps", bearer(body["access_token"])) == 200
        # A token spent before the restart is still spent: reuse revokes the family...
        status, body = refresh(gw, spent["refresh_token"])
        assert status == 400 and body["error"] == "invalid_grant"
        assert refresh(gw, rotated["refresh_token"])[0] == 400
        # ...and a revocation from before the restart still holds for both tokens.
        assert refresh(gw, revoked["refresh_token"])[0] == 400
        assert gw.status("GET", "/apps", bearer(revoked["access_token"])) == 401
        assert gw.status("GET", "/apps", bearer(live["access_token"])) == 200


# --- RS256 --------------------------------------------------------------------------------

def test_rs256_with_key_files(domain: int, tmp_path: Path) -> None:
    private, public, key = write_rsa_keys(tmp_path)
    settings = ["auth.enabled=true", "auth.jwt_algorithm=RS256", f"auth.jwt_secret={private}",
                f"auth.jwt_public_key={public}", "auth.require_auth_for=all",
                "auth.clients=[ops:ops-secret:operator]", f"state_dir={tmp_path}"]
    verify_only = ["auth.enabled=true", "auth.jwt_algorithm=RS256",
                   f"auth.jwt_public_key={public}", "auth.require_auth_for=all",
                   f"state_dir={tmp_path / 'peer'}"]
    with SecureGateway(free_port(), domain, settings, tmp_path / "gw.log") as gw, \
            SecureGateway(free_port(), domain, verify_only, tmp_path / "peer.log") as peer:
        pair = gw.token("ops", "ops-secret")
        assert jwt.get_unverified_header(pair["access_token"])["alg"] == "RS256"
        claims = jwt.decode(pair["access_token"], key.public_key(), algorithms=["RS256"],
                            issuer="diag-gateway")
        assert claims["role"] == "operator"
        assert gw.status("GET", "/apps", bearer(pair["access_token"])) == 200
        status, body = refresh(gw, pair["refresh_token"])
        assert status == 200
        # A gateway holding only the public key accepts the tokens but issues none.
        assert peer.status("GET", "/apps", bearer(body["access_token"])) == 200
        resp = peer.request("POST", "/auth/authorize", body={
            "grant_type": "client_credentials", "client_id": "ops", "client_secret": "x"})
        assert resp.status == 503 and resp.json()["error"] == "temporarily_unavailable"
        # HS256 tokens, and the classic confusion (public key PEM used as HMAC secret), fail.
        assert gw.status("GET", "/apps", bearer(mint(SECRET, "admin"))) == 401
        forged = forge_hs256(public.read_bytes(), "admin")
        assert gw.status("GET", "/apps", bearer(forged)) == 401
        root = gw.request("GET", "/", headers=bearer(body["access_token"])).json()
        assert root["auth"]["algorithm"] == "RS256"


# --- startup refusals ---------------------------------------------------------------------

# Every refusal is covered in-process by tests/unit/test_auth_settings.py; two through the CLI.
@pytest.mark.parametrize(("settings", "named", "hidden"), [
    (["auth.enabled=true", "auth.jwt_secret=short-secret"], "auth.jwt_secret", "short-secret"),
    (["server.tls.enabled=true"], "server.tls.cert_file", None),
])
def test_bad_security_settings_refuse_to_start(domain: int, tmp_path: Path,
                                               settings: list[str], named: str,
                                               hidden: str | None) -> None:
    cmd = [sys.executable, "-m", "gateway", "run", "--port", str(free_port()),
           "--domain", str(domain), "--set", f"state_dir={tmp_path}"]
    for s in settings:
        cmd += ["--set", s]
    proc = subprocess.run(cmd, cwd=ROOT, env=ros_env(domain), capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert f"'{named}'" in err
    if hidden:
        assert hidden not in err
