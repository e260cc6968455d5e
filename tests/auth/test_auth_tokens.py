"""Clients, keys and access tokens: explicit inputs and `now`."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from gateway.auth.tokens import (
    AccessTokens,
    ClientList,
    TokenError,
    load_keys,
    parse_clients,
)
from gateway.model.roles import Role
from gateway.settings.config import ConfigError

SECRET = "k" * 32
NOW = 1_800_000_000.0


def hs_tokens(ttl: int = 60, issuer: str = "gw") -> AccessTokens:
    keys = load_keys("HS256", SECRET, "", required=True)
    assert keys is not None
    return AccessTokens(keys, issuer, ttl)


def pem_private(key: object, path: Path) -> Path:
    path.write_bytes(key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return path


def pem_public(key: object, path: Path) -> Path:
    path.write_bytes(key.public_key().public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return path


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


# --- clients ------------------------------------------------------------------------------

def test_clients_parse_with_colons_in_the_secret() -> None:
    clients = parse_clients(["ui:pa:ss:word:Operator", "ci:s:admin"])
    assert clients["ui"].secret == b"pa:ss:word" and clients["ui"].role is Role.OPERATOR
    assert clients["ci"].role is Role.ADMIN


@pytest.mark.parametrize("entry", ["nocolon", "id:secret", ":secret:viewer", "id::viewer",
                                   "id:hunter2-secret:root"])
def test_bad_client_entries_never_echo_the_secret(entry: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_clients([entry])
    assert "'auth.clients'" in str(exc.value)
    assert "hunter2" not in str(exc.value) and "secret:" not in str(exc.value)


def test_duplicate_client_is_refused() -> None:
    with pytest.raises(ConfigError, match="twice"):
        parse_clients(["a:x:viewer", "a:y:admin"])


def test_client_authentication() -> None:
    clients = ClientList(parse_clients(["a:right:viewer"]))
    assert clients.authenticate("a", "right") is not None
    assert clients.authenticate("a", "wrong") is None
    assert clients.authenticate("nobody", "right") is None
    assert clients.authenticate("a", "") is None


# --- keys ---------------------------------------------------------------------------------

def test_hs256_keys() -> None:
    assert load_keys("HS256", "", "", required=False) is None
    with pytest.raises(ConfigError, match="'auth.jwt_secret'.*required"):
        load_keys("HS256", "", "", required=True)
    with pytest.raises(ConfigError, match="at least 32 bytes"):
        load_keys("HS256", "k" * 31, "", required=False)


def test_rs256_keys_from_files(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    private = pem_private(rsa_key, tmp_path / "k.pem")
    public = pem_public(rsa_key, tmp_path / "k.pub")
    both = load_keys("RS256", str(private), str(public), required=True)
    derived = load_keys("RS256", str(private), "", required=True)
    verify_only = load_keys("RS256", "", str(public), required=True)
    assert both and derived and verify_only
    assert verify_only.signing_key is None
    token = AccessTokens(both, "gw", 60).issue("a", Role.VIEWER, "f", NOW)
    for keys in (derived, verify_only):
        assert AccessTokens(keys, "gw", 60).verify(token, NOW).subject == "a"


def test_rs256_key_refusals(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = pem_private(rsa_key, tmp_path / "k.pem")
    with pytest.raises(ConfigError, match="'auth.jwt_public_key': does not match"):
        load_keys("RS256", str(private), str(pem_public(other, tmp_path / "o.pub")), True)
    with pytest.raises(ConfigError, match="'auth.jwt_secret': cannot read"):
        load_keys("RS256", str(tmp_path / "missing.pem"), "", True)
    (tmp_path / "junk.pem").write_text("not a key")
    with pytest.raises(ConfigError, match="'auth.jwt_secret'"):
        load_keys("RS256", str(tmp_path / "junk.pem"), "", True)
    ec_key = pem_private(ec.generate_private_key(ec.SECP256R1()), tmp_path / "ec.pem")
    with pytest.raises(ConfigError, match="no RSA private key"):
        load_keys("RS256", str(ec_key), "", True)
    small = pem_private(rsa.generate_private_key(public_exponent=65537, key_size=1024),
                        tmp_path / "small.pem")
    with pytest.raises(ConfigError, match="2048"):
        load_keys("RS256", str(small), "", True)
    with pytest.raises(ConfigError, match="RS256 needs a private key"):
        load_keys("RS256", "", "", True)


# --- access tokens ------------------------------------------------------------------------

def test_issue_and_verify() -> None:
    tokens = hs_tokens()
    token = tokens.issue("ui", Role.OPERATOR, "fam1", NOW)
    claims = tokens.verify(token, NOW + 1)
    assert (claims.subject, claims.role, claims.family) == ("ui", Role.OPERATOR, "fam1")
    assert claims.expires_at == NOW + 60
    assert jwt.get_unverified_header(token)["typ"] == "at+jwt"


def test_expiry_uses_the_given_clock_even_when_cached() -> None:
    tokens = hs_tokens(ttl=60)
    token = tokens.issue("ui", Role.VIEWER, "f", NOW)
    tokens.verify(token, NOW + 59)  # cached now
    with pytest.raises(TokenError) as exc:
        tokens.verify(token, NOW + 60)
    assert exc.value.reason == "expired"


@pytest.mark.parametrize("forge", [
    lambda: jwt.encode({"iss": "gw", "sub": "a", "role": "admin", "fam": "f", "jti": "j",
                        "iat": NOW, "exp": NOW + 60}, "x" * 32, algorithm="HS256",
                       headers={"typ": "at+jwt"}),  # wrong key
    lambda: jwt.encode({"iss": "other", "sub": "a", "role": "admin", "fam": "f", "jti": "j",
                        "iat": NOW, "exp": NOW + 60}, SECRET, algorithm="HS256",
                       headers={"typ": "at+jwt"}),  # wrong issuer
    lambda: jwt.encode({"iss": "gw", "sub": "a", "role": "root", "fam": "f", "jti": "j",
                        "iat": NOW, "exp": NOW + 60}, SECRET, algorithm="HS256",
                       headers={"typ": "at+jwt"}),  # unknown role
    lambda: jwt.encode({"iss": "gw", "sub": "a", "role": "admin", "jti": "j",
                        "iat": NOW, "exp": NOW + 60}, SECRET, algorithm="HS256",
                       headers={"typ": "at+jwt"}),  # no family
    lambda: jwt.encode({"iss": "gw", "sub": "a", "role": "admin", "fam": "f", "jti": "j",
                        "iat": NOW, "exp": NOW + 60}, SECRET, algorithm="HS256"),  # not at+jwt
    lambda: jwt.encode({"iss": "gw", "sub": "a", "role": "admin", "fam": "f", "jti": "j",
                        "iat": NOW, "exp": NOW + 60}, None, algorithm="none",
                       headers={"typ": "at+jwt"}),  # unsigned
    lambda: "abc.def.ghi",
    lambda: "",
])
def test_invalid_tokens(forge: object) -> None:
    with pytest.raises(TokenError) as exc:
        hs_tokens().verify(forge(), NOW)  # type: ignore[operator]
    assert exc.value.reason == "invalid"


def test_peek_never_raises() -> None:
    tokens = hs_tokens()
    assert tokens.peek("junk", NOW) is None
    assert tokens.peek(tokens.issue("a", Role.ADMIN, "f", NOW), NOW) is not None


def test_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import gateway.auth.tokens as mod

    monkeypatch.setattr(mod, "VERIFY_CACHE_SIZE", 8)
    tokens = hs_tokens()
    for n in range(50):
        tokens.verify(tokens.issue(f"c{n}", Role.VIEWER, "f", NOW), NOW)
    assert len(tokens._cache) <= 8
