"""Refresh tokens: rotation, reuse detection, revocation, expiry, persistence; explicit `now`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.auth.store import RefreshRefused, RefreshStore, store_path, token_hash
from gateway.auth.tokens import (
    AccessTokens,
    ClientList,
    Grants,
    OAuthError,
    load_keys,
    parse_clients,
)
from gateway.model.roles import Role

NOW = 1_800_000_000.0
CLIENTS = ["ops:ops-secret:operator", "boss:boss-secret:admin"]


def grants(path: Path, clients: list[str] = CLIENTS, refresh_ttl: int = 600) -> Grants:
    keys = load_keys("HS256", "s" * 32, "", required=True)
    assert keys is not None
    g = Grants(AccessTokens(keys, "gw", 60), ClientList(parse_clients(clients)),
               RefreshStore(path / "auth" / "rt.sqlite3"), refresh_ttl)
    g.load(NOW)
    return g


def oauth_error(fn: object, *args: object) -> OAuthError:
    with pytest.raises(OAuthError) as exc:
        fn(*args)  # type: ignore[operator]
    return exc.value


def test_store_path_default_and_given() -> None:
    assert store_path("/srv/gw") == Path("/srv/gw/auth/refresh_tokens.sqlite3")
    assert store_path("").parts[-4:] == ("state", "diag-gateway", "auth",
                                         "refresh_tokens.sqlite3")


def test_client_credentials_then_rotation(tmp_path: Path) -> None:
    g = grants(tmp_path)
    first = g.client_credentials("ops", "ops-secret", None, NOW)
    assert first.role is Role.OPERATOR and first.expires_in == 60
    second = g.refresh(first.refresh_token, NOW + 10)
    assert second.refresh_token != first.refresh_token
    claims = g.tokens.verify(second.access_token, NOW + 10)  # type: ignore[union-attr]
    first_claims = g.tokens.verify(first.access_token, NOW)  # type: ignore[union-attr]
    assert claims.family == first_claims.family
    third = g.refresh(second.refresh_token, NOW + 20)
    assert third.body()["token_type"] == "Bearer"


def test_reuse_revokes_the_family(tmp_path: Path) -> None:
    g = grants(tmp_path)
    first = g.client_credentials("ops", "ops-secret", None, NOW)
    second = g.refresh(first.refresh_token, NOW + 1)
    err = oauth_error(g.refresh, first.refresh_token, NOW + 2)
    assert (err.status, err.error) == (400, "invalid_grant") and "family" in err.description
    assert oauth_error(g.refresh, second.refresh_token, NOW + 3).error == "invalid_grant"
    fam = g.tokens.verify(second.access_token, NOW + 3).family  # type: ignore[union-attr]
    assert g.is_revoked(fam)
    other = g.client_credentials("ops", "ops-secret", None, NOW + 4)
    assert not g.is_revoked(g.tokens.verify(other.access_token, NOW + 4).family)  # type: ignore[union-attr]


def test_expired_and_unknown_refresh_tokens(tmp_path: Path) -> None:
    g = grants(tmp_path, refresh_ttl=100)
    pair = g.client_credentials("ops", "ops-secret", None, NOW)
    assert "expired" in oauth_error(g.refresh, pair.refresh_token, NOW + 100).description
    assert "Unknown" in oauth_error(g.refresh, "made-up", NOW).description
    # An expired token was not spent: nothing was revoked.
    assert not g.is_revoked(g.tokens.verify(pair.access_token, NOW).family)  # type: ignore[union-attr]


def test_revoke_takes_the_refresh_token_only(tmp_path: Path) -> None:
    g = grants(tmp_path)
    a = g.client_credentials("ops", "ops-secret", None, NOW)
    g.revoke(a.refresh_token, NOW + 1)
    assert "revoked" in oauth_error(g.refresh, a.refresh_token, NOW + 2).description
    # An access token (sent on every request) revokes nothing: the family lives on.
    b = g.client_credentials("ops", "ops-secret", None, NOW)
    g.revoke(b.access_token, NOW + 1)
    assert not g.is_revoked(g.tokens.verify(b.access_token, NOW + 2).family)  # type: ignore[union-attr]
    assert g.refresh(b.refresh_token, NOW + 2).access_token
    g.revoke("unknown", NOW)  # silently accepted


def test_state_survives_a_new_store_on_the_same_file(tmp_path: Path) -> None:
    g = grants(tmp_path)
    live = g.client_credentials("ops", "ops-secret", None, NOW)
    spent = g.client_credentials("ops", "ops-secret", None, NOW)
    g.refresh(spent.refresh_token, NOW + 1)
    revoked = g.client_credentials("ops", "ops-secret", None, NOW)
    g.revoke(revoked.refresh_token, NOW + 1)
    g.store.close()

    again = grants(tmp_path)
    fam = again.tokens.verify(revoked.access_token, NOW + 2).family  # type: ignore[union-attr]
    assert again.is_revoked(fam)
    assert oauth_error(again.refresh, spent.refresh_token, NOW + 2).error == "invalid_grant"
    assert again.refresh(live.refresh_token, NOW + 2).role is Role.OPERATOR


def test_only_hashes_on_disk_and_owner_only_file(tmp_path: Path) -> None:
    g = grants(tmp_path)
    pair = g.client_credentials("ops", "ops-secret", None, NOW)
    path = g.store.path
    assert pair.refresh_token.encode() not in path.read_bytes()
    assert path.stat().st_mode & 0o077 == 0
    assert path.parent.stat().st_mode & 0o077 == 0
    rows = sqlite3.connect(path).execute("SELECT hash FROM refresh").fetchall()
    assert rows == [(token_hash(pair.refresh_token),)]


def test_rotation_is_atomic(tmp_path: Path) -> None:
    store = RefreshStore(tmp_path / "rt.sqlite3")
    store.start_family("f", token_hash("a"), "c", "viewer", NOW, NOW + 10, NOW + 10)
    store.start_family("g", token_hash("x"), "c", "viewer", NOW, NOW + 10, NOW + 10)
    # The successor's hash collides with an existing row: the whole rotation rolls back.
    with pytest.raises(sqlite3.IntegrityError):
        store.rotate(token_hash("a"), token_hash("x"), NOW, NOW + 10, NOW + 10)
    grant = store.rotate(token_hash("a"), token_hash("b"), NOW, NOW + 10, NOW + 10)
    assert grant.family == "f"
    with pytest.raises(RefreshRefused) as exc:
        store.rotate(token_hash("a"), token_hash("c"), NOW, NOW + 10, NOW + 10)
    assert exc.value.reason == "reused"


def test_prune_drops_expired_rows(tmp_path: Path) -> None:
    store = RefreshStore(tmp_path / "rt.sqlite3")
    store.start_family("f", token_hash("a"), "c", "viewer", NOW, NOW + 10, NOW + 10)
    store.start_family("g", token_hash("b"), "c", "viewer", NOW, NOW + 100, NOW + 100)
    assert store.prune(NOW + 50) == 2
    assert store.count() == (1, 1)


def test_client_errors(tmp_path: Path) -> None:
    g = grants(tmp_path)
    err = oauth_error(g.client_credentials, "ops", "wrong", None, NOW)
    assert (err.status, err.error) == (401, "invalid_client")
    assert oauth_error(g.client_credentials, "nobody", "x", None, NOW).error == "invalid_client"
    assert g.client_credentials("boss", "boss-secret", "viewer", NOW).role is Role.VIEWER
    err = oauth_error(g.client_credentials, "ops", "ops-secret", "admin", NOW)
    assert err.error == "invalid_scope"


def test_scope_is_kept_on_refresh_and_a_removed_client_ends_its_family(tmp_path: Path) -> None:
    g = grants(tmp_path)
    low = g.client_credentials("boss", "boss-secret", "operator", NOW)
    assert g.refresh(low.refresh_token, NOW + 1).role is Role.OPERATOR
    pair = g.client_credentials("ops", "ops-secret", None, NOW)
    g.store.close()
    fewer = grants(tmp_path, clients=["boss:boss-secret:admin"])
    err = oauth_error(fewer.refresh, pair.refresh_token, NOW + 1)
    assert err.error == "invalid_grant" and "no longer configured" in err.description


def test_no_signing_key_means_no_tokens(tmp_path: Path) -> None:
    g = Grants(None, ClientList({}), RefreshStore(tmp_path / "rt.sqlite3"), 60)
    err = oauth_error(g.client_credentials, "a", "b", None, NOW)
    assert (err.status, err.error) == (503, "temporarily_unavailable")
