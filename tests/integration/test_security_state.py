"""Round-3 small findings on a real gateway: private state files, token iat and lifetime,
fixed 401 text, exact CORS origins, log configurations that name no known field."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from tests.conftest import free_port
from tests.harness import assert_error
from tests.integration.test_bulk_data import multipart
from tests.integration.test_security_helpers import (
    OTHER_SECRET,
    SECRET,
    SecureGateway,
    auth_settings,
    bearer,
)

pytestmark = pytest.mark.integration

MAX_LIFETIME_S = 600
ORIGIN = "https://ui.example"
MANIFEST = """\
manifest_version: "1.0"
metadata: {name: state, version: "1"}
areas:
  - id: plant
components:
  - id: ctl
    area: plant
apps:
  - id: pump
    is_located_on: ctl
"""
WRITE = ("PUT", "/apps/pump/logs/configuration")  # a configurator write


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sec_state")


@pytest.fixture(scope="module")
def gw(domain: int, root: Path) -> Iterator[SecureGateway]:
    (root / "manifest.yaml").write_text(MANIFEST)
    state = root / "state"
    settings = auth_settings(
        state, "write", "discovery.mode=manifest_only",
        f"discovery.manifest_path={root / 'manifest.yaml'}",
        f"auth.max_token_lifetime_seconds={MAX_LIFETIME_S}", "auth.token_expiry_seconds=3600",
        f"cors.allowed_origins=[{ORIGIN}]", "plugins=[update_provider]",
        "bulk_data.categories=[packages]",
        f"fault_triggers.storage.path={state / 'fault_triggers.json'}")
    with SecureGateway(free_port(), domain, settings, root / "gw.log") as g:
        yield g


def token(key: str = SECRET, *, iat_in_s: int = 0, lifetime_s: int = 300,
          role: str = "admin") -> str:
    """A token shaped like the gateway's own, issued iat_in_s from now."""
    iat = int(time.time()) + iat_in_s
    claims = {"iss": "diag-gateway", "sub": f"{role}-client", "role": role, "scope": role,
              "fam": uuid.uuid4().hex, "jti": uuid.uuid4().hex, "iat": iat,
              "exp": iat + lifetime_s}
    return jwt.encode(claims, key, algorithm="HS256", headers={"typ": "at+jwt"})


def write(gw: SecureGateway, tok: str) -> Any:
    return gw.request(*WRITE, body={"severity_filter": "info"}, headers=bearer(tok))


def authorize(gw: SecureGateway) -> dict[str, Any]:
    resp = gw.request("POST", "/auth/authorize", body={
        "grant_type": "client_credentials", "client_id": "admin-client",
        "client_secret": "admin-secret"})
    assert resp.status == 200, resp
    return resp.json()  # type: ignore[no-any-return]


def test_401_bodies_carry_a_fixed_message(gw: SecureGateway) -> None:
    messages = set()
    for bad in (token(OTHER_SECRET), "not.a.jwt", "abc", token()[:-4] + "AAAA"):
        resp = write(gw, bad)
        assert resp.status == 401, resp
        messages.add(resp.json()["message"])
    (message,) = messages  # one text whatever the library found
    assert "request a new one" in message
    for library_text in ("Signature verification failed", "Not enough segments",
                         "Invalid header", "Invalid crypto padding", "Decod"):
        assert library_text not in message


def test_a_token_issued_in_the_future_is_refused(gw: SecureGateway) -> None:
    resp = write(gw, token(iat_in_s=3600))
    err = assert_error(resp, 401, "unauthorized")
    assert "issued in the future" in err["message"]
    assert write(gw, token(iat_in_s=10)).status == 204  # clock skew within the leeway


def test_tokens_living_past_the_maximum_are_refused_and_never_issued(
        gw: SecureGateway) -> None:
    forged = token(lifetime_s=30 * 86400)  # the 30-day admin token of the finding
    err = assert_error(write(gw, forged), 401, "unauthorized")
    assert "auth.max_token_lifetime_seconds" in err["message"]
    assert write(gw, token(lifetime_s=MAX_LIFETIME_S)).status == 204
    issued = authorize(gw)
    assert issued["expires_in"] == MAX_LIFETIME_S  # auth.token_expiry_seconds=3600, capped
    claims = jwt.decode(issued["access_token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == MAX_LIFETIME_S
    assert write(gw, issued["access_token"]).status == 204


@pytest.mark.parametrize("origin", ["https://UI.example", "HTTPS://ui.example",
                                    "https://ui.example/", "https://ui.example.evil"])
def test_cors_origins_match_exactly(gw: SecureGateway, origin: str) -> None:
    resp = gw.request("GET", "/apps", headers={"Origin": origin})
    assert resp.status == 200 and "access-control-allow-origin" not in resp.headers
    pre = gw.request("OPTIONS", "/apps", headers={"Origin": origin,
                                                  "Access-Control-Request-Method": "GET"})
    assert pre.status == 403 and "access-control-allow-origin" not in pre.headers
    ok = gw.request("GET", "/apps", headers={"Origin": ORIGIN})
    assert ok.headers["access-control-allow-origin"] == ORIGIN


def test_state_files_are_private(gw: SecureGateway, root: Path) -> None:
    tok = bearer(authorize(gw)["access_token"])  # the refresh-token store
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo("app/version.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"1"))
    pkg = data.getvalue()
    form, ctype = multipart(("file", "p.tar.gz", "application/gzip", pkg))
    up = gw.request("POST", "/components/ctl/bulk-data/packages", raw=form,  # uploads
                    headers={**tok, "Content-Type": ctype})
    assert up.status == 201, up
    reg = {"id": "priv", "package": {"bulk_data": f"packages/{up.json()['id']}",
                                     "sha256": hashlib.sha256(pkg).hexdigest()}}
    assert gw.request("POST", "/updates", reg, headers=tok).status == 201  # updates registry
    assert gw.request("PUT", "/updates/priv/automated", headers=tok).status == 202
    gw.wait_for("/updates/priv/status", lambda b: b["status"] in ("completed", "failed"), 30)
    resp = gw.request("POST", "/apps/pump/triggers", {  # the trigger store
        "resource": "/api/v1/apps/pump/faults", "trigger_condition": {
            "condition_type": "OnChange"}, "persistent": True}, headers=tok)
    assert resp.status == 201, resp
    resp = gw.request("POST", "/apps/pump/fault-triggers", {  # fault-trigger rules file
        "data_name": "/pump/pressure", "operator": ">", "threshold": 5,
        "fault_code": "PRIV_HIGH"}, headers=tok)
    assert resp.status == 201, resp
    state = root / "state"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    installed = state / "updates" / "installed"  # installed software keeps the package's modes
    seen = {"refresh": False, "faults": False, "triggers": False, "registry": False,
            "rules": False, "upload": False}
    loose = []
    for path in state.rglob("*"):
        if path.is_symlink() or installed in path.parents or path == installed:
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            loose.append(f"{oct(mode)} {path.relative_to(state)}")
        name = str(path.relative_to(state))
        for key, word in (("refresh", "refresh"), ("faults", "faults"),
                          ("triggers", "triggers"), ("registry", "registry.json"),
                          ("rules", "fault_triggers.json"), ("upload", "bulk_data")):
            seen[key] = seen[key] or word in name
    assert not loose, loose
    assert all(seen.values()), (seen, sorted(str(p.relative_to(state))
                                             for p in state.rglob("*")))
