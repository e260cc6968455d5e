"""Tokens across restarts, RS256 key files, secrets kept out of logs and files, refused
settings: real gateways (the grants and the bearer checks are tested in process:
tests/auth/test_inproc_auth_dashboard.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

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


def refresh(gw: SecureGateway, token: str) -> tuple[int, dict]:
    resp = gw.request("POST", "/auth/token",
                      body={"grant_type": "refresh_token", "refresh_token": token})
    return resp.status, resp.json()


@pytest.fixture(scope="module")
def hs(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureGateway]:
    d = tmp_path_factory.mktemp("hs")
    with SecureGateway(free_port(), domain, auth_settings(d, "write"), d / "gw.log") as g:
        yield g


# --- secrets -------------------------------------------------------------------------------

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

# Every refusal is covered in-process by tests/auth/test_auth_settings.py; two through the CLI.
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
