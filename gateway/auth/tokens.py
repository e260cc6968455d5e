"""Clients, signing keys and access tokens (HS256 or RS256 JWTs), verified through a small cache."""

from __future__ import annotations

import hmac
import secrets
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa

from ..model.roles import Role
from ..settings.config import ConfigError
from .store import RefreshRefused, RefreshStore, token_hash

ALGORITHMS = ("HS256", "RS256")
MIN_HMAC_KEY_BYTES = 32  # RFC 7518 section 3.2: at least the hash output size
MIN_RSA_BITS = 2048
ACCESS_TOKEN_TYPE = "at+jwt"  # RFC 9068 header typ of access tokens
VERIFY_CACHE_SIZE = 4096
VERIFY_CACHE_TTL_S = 30.0
IAT_LEEWAY_S = 30  # clock skew allowed between the issuer and this gateway
INVALID_TOKEN = ("Invalid access token: it is malformed, not signed by this gateway's key or "
                 "from another issuer; request a new one (POST /auth/authorize)")
ROLE_NAMES = {r.label: r for r in Role}


class TokenError(Exception):
    """A bearer token that cannot be used; reason is 'expired' or 'invalid'."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Client:
    """One configured client: id, secret and the role its tokens carry."""

    client_id: str
    secret: bytes
    role: Role


@dataclass(frozen=True)
class Claims:
    """What a verified access token says."""

    subject: str
    role: Role
    family: str
    expires_at: float
    token_id: str


def parse_clients(entries: Iterable[str]) -> dict[str, Client]:
    """`<client_id>:<client_secret>:<role>` entries; ConfigError never echoes a secret."""
    out: dict[str, Client] = {}
    for n, entry in enumerate(entries, 1):
        client_id, sep1, rest = entry.partition(":")
        secret, sep2, role_name = rest.rpartition(":")
        where = f"setting 'auth.clients': entry {n}"
        if not (sep1 and sep2) or not client_id or not secret:
            raise ConfigError(f"{where} is not <client_id>:<client_secret>:<role>")
        role = ROLE_NAMES.get(role_name.strip().lower())
        if role is None:
            raise ConfigError(f"{where} (client '{client_id}') names no role; use one of "
                              f"{', '.join(ROLE_NAMES)}")
        if client_id in out:
            raise ConfigError(f"{where}: client '{client_id}' is listed twice")
        out[client_id] = Client(client_id, secret.encode(), role)
    return out


class ClientList:
    """Client authentication with constant-time secret comparison."""

    def __init__(self, clients: dict[str, Client]) -> None:
        self._clients = clients
        self._dummy = secrets.token_bytes(32)

    def __contains__(self, client_id: str) -> bool:
        return client_id in self._clients

    def get(self, client_id: str) -> Client | None:
        """The client of this id, if configured."""
        return self._clients.get(client_id)

    def authenticate(self, client_id: str, secret: str) -> Client | None:
        """The client when the secret matches; unknown ids cost the same comparison."""
        client = self._clients.get(client_id)
        expected = client.secret if client is not None else self._dummy
        ok = hmac.compare_digest(secret.encode(), expected)
        return client if ok and client is not None else None


@dataclass(frozen=True)
class Keys:
    """The algorithm, the signing key (None: this gateway only verifies) and the verify key."""

    algorithm: str
    signing_key: Any
    verify_key: Any


def _read(path: str, setting: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ConfigError(f"setting '{setting}': cannot read {path}: {exc.strerror}") from None


# jwt and cryptography (about 9 MiB) are imported on first use: a gateway without auth never
# loads them.
def _rsa_private(path: str) -> rsa.RSAPrivateKey:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - ~9 MiB: auth only
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415 - ~9 MiB: auth only

    data = _read(path, "auth.jwt_secret")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise ConfigError("setting 'auth.jwt_secret': with RS256 it must name an unencrypted "
                          "PEM RSA private key file") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError("setting 'auth.jwt_secret': the key file holds no RSA private key")
    return key


def _rsa_public(path: str) -> rsa.RSAPublicKey:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - ~9 MiB: auth only
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415 - ~9 MiB: auth only

    data = _read(path, "auth.jwt_public_key")
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise ConfigError("setting 'auth.jwt_public_key': not a PEM public key file") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise ConfigError("setting 'auth.jwt_public_key': the key file holds no RSA public key")
    return key


def load_keys(algorithm: str, jwt_secret: str, jwt_public_key: str,
              required: bool) -> Keys | None:
    """Keys from the auth.* settings; None when nothing is configured and none is required."""
    if algorithm == "HS256":
        if not jwt_secret:
            if required:
                raise ConfigError("setting 'auth.jwt_secret': required when auth.enabled is true")
            return None
        if len(jwt_secret.encode()) < MIN_HMAC_KEY_BYTES:
            raise ConfigError(f"setting 'auth.jwt_secret': an HS256 secret needs at least "
                              f"{MIN_HMAC_KEY_BYTES} bytes")
        return Keys("HS256", jwt_secret.encode(), jwt_secret.encode())
    if algorithm != "RS256":
        raise ConfigError(f"setting 'auth.jwt_algorithm': use one of {', '.join(ALGORITHMS)}")
    private = _rsa_private(jwt_secret) if jwt_secret else None
    public = _rsa_public(jwt_public_key) if jwt_public_key else None
    if private is None and public is None:
        if required:
            raise ConfigError("setting 'auth.jwt_secret': RS256 needs a private key file "
                              "(or auth.jwt_public_key to verify only)")
        return None
    if public is None:
        assert private is not None
        public = private.public_key()
    if private is not None and private.public_key().public_numbers() != public.public_numbers():
        raise ConfigError("setting 'auth.jwt_public_key': does not match the private key of "
                          "auth.jwt_secret")
    if public.key_size < MIN_RSA_BITS:
        raise ConfigError(f"setting 'auth.jwt_secret': RSA keys need at least {MIN_RSA_BITS} "
                          "bits")
    return Keys("RS256", private, public)


class AccessTokens:
    """Issues and verifies access tokens; verified tokens are cached by their raw string."""

    def __init__(self, keys: Keys, issuer: str, ttl_s: int,
                 max_lifetime_s: int | None = None) -> None:
        self.keys = keys
        self.issuer = issuer
        self.max_lifetime_s = max_lifetime_s if max_lifetime_s is not None else ttl_s
        self.ttl_s = min(ttl_s, self.max_lifetime_s)  # issuance capped by the maximum
        self._cache: dict[str, tuple[Claims, float]] = {}

    @property
    def can_issue(self) -> bool:
        """False for a verify-only gateway (RS256 public key alone)."""
        return self.keys.signing_key is not None

    def issue(self, subject: str, role: Role, family: str, now: float) -> str:
        """A signed access token for subject with role, in a refresh family."""
        import jwt  # noqa: PLC0415 - jwt, cryptography (~9 MiB): auth only

        claims = {
            "iss": self.issuer, "sub": subject, "role": role.label, "scope": role.label,
            "fam": family, "jti": uuid.uuid4().hex, "iat": int(now), "exp": int(now) + self.ttl_s,
        }
        return jwt.encode(claims, self.keys.signing_key, algorithm=self.keys.algorithm,
                          headers={"typ": ACCESS_TOKEN_TYPE})

    def verify(self, token: str, now: float) -> Claims:
        """The claims of a valid, unexpired token; TokenError otherwise."""
        hit = self._cache.get(token)
        if hit is not None and now < hit[1]:
            return hit[0]
        claims = self._decode(token, now)
        if len(self._cache) >= VERIFY_CACHE_SIZE:
            self._cache = {k: v for k, v in self._cache.items() if now < v[1]}
            if len(self._cache) >= VERIFY_CACHE_SIZE:
                self._cache.clear()
        self._cache[token] = (claims, min(claims.expires_at, now + VERIFY_CACHE_TTL_S))
        return claims

    def _decode(self, token: str, now: float) -> Claims:
        import jwt  # noqa: PLC0415 - jwt, cryptography (~9 MiB): auth only

        if not token.isascii():  # a JWT is base64url and dots; other bytes cannot encode
            raise TokenError("invalid", INVALID_TOKEN)
        try:
            # Expiry is checked below against `now`, so tests and callers share one clock.
            decoded = jwt.decode_complete(
                token, self.keys.verify_key, algorithms=[self.keys.algorithm],
                issuer=self.issuer,
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False,
                         "require": ["iss", "sub", "role", "fam", "jti", "iat", "exp"]})
        except jwt.PyJWTError:  # its text names library internals: a fixed message instead
            raise TokenError("invalid", INVALID_TOKEN) from None
        header, payload = decoded["header"], decoded["payload"]
        if header.get("typ") != ACCESS_TOKEN_TYPE:
            raise TokenError("invalid", "Invalid access token: not an access token")
        role = ROLE_NAMES.get(payload["role"]) if isinstance(payload["role"], str) else None
        exp, iat = payload["exp"], payload["iat"]
        if role is None or not _is_time(exp) or not _is_time(iat):
            raise TokenError("invalid", "Invalid access token: bad role, iat or exp claim")
        if iat > now + IAT_LEEWAY_S:
            raise TokenError("invalid", "Invalid access token: issued in the future (iat); "
                                        "check the clocks of the issuer and this gateway")
        if exp - iat > self.max_lifetime_s:
            raise TokenError("invalid", f"Invalid access token: it lives longer than this "
                                        f"gateway accepts ({self.max_lifetime_s} s, setting "
                                        "auth.max_token_lifetime_seconds)")
        if now >= exp:
            raise TokenError("expired", "The access token has expired")
        return Claims(str(payload["sub"]), role, str(payload["fam"]), float(exp),
                      str(payload["jti"]))

    def peek(self, token: str, now: float) -> Claims | None:
        """The claims of a valid token, or None (never raises)."""
        try:
            return self.verify(token, now)
        except TokenError:
            return None

    def peek_uncached(self, token: str, now: float) -> Claims | None:
        """Like peek, without touching the cache (safe from worker threads)."""
        try:
            return self._decode(token, now)
        except TokenError:
            return None


def _is_time(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class OAuthError(Exception):
    """An RFC 6749 error answer: status, error code and description."""

    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description


@dataclass(frozen=True)
class TokenPair:
    """What the token endpoints answer."""

    access_token: str
    expires_in: int
    refresh_token: str
    role: Role

    def body(self) -> dict[str, Any]:
        """The JSON answer of /auth/authorize and /auth/token."""
        return {"access_token": self.access_token, "token_type": "Bearer",
                "expires_in": self.expires_in, "refresh_token": self.refresh_token,
                "scope": self.role.label}


PRUNE_EVERY_S = 3600.0


class Grants:
    """Client-credentials grants, single-use refresh rotation with reuse detection, revocation.

    Blocking (SQLite): call from a worker thread. The revoked-family table it keeps in memory
    is read on the request path by `is_revoked`.
    """

    def __init__(self, tokens: AccessTokens | None, clients: ClientList, store: RefreshStore,
                 refresh_ttl_s: int) -> None:
        self.tokens = tokens
        self.clients = clients
        self.store = store
        self.refresh_ttl_s = refresh_ttl_s
        self._revoked: dict[str, float] = {}  # replaced whole, never mutated: read lock-free
        self._revoked_lock = threading.Lock()  # serializes writers (worker threads)
        self._pruned_at = float("-inf")

    def load(self, now: float) -> None:
        """Read the revoked families from disk (at startup)."""
        self._revoked = self.store.revoked_families(now)

    def is_revoked(self, family: str) -> bool:
        """True when the family of an access token was revoked."""
        return family in self._revoked

    def _issuer(self) -> AccessTokens:
        if self.tokens is None or not self.tokens.can_issue:
            raise OAuthError(503, "temporarily_unavailable",
                             "This gateway does not issue tokens (no signing key: setting "
                             "auth.jwt_secret)")
        return self.tokens

    def _family_expiry(self, now: float, tokens: AccessTokens) -> float:
        return now + max(self.refresh_ttl_s, tokens.ttl_s)

    def client_credentials(self, client_id: str, secret: str, scope: str | None,
                           now: float) -> TokenPair:
        """A new token family for an authenticated client."""
        tokens = self._issuer()
        client = self.clients.authenticate(client_id, secret)
        if client is None:
            raise OAuthError(401, "invalid_client", "Unknown client or wrong client secret")
        role = client.role
        if scope:
            wanted = ROLE_NAMES.get(scope.strip().lower())
            if wanted is None or wanted > client.role:
                raise OAuthError(400, "invalid_scope",
                                 f"scope must be a role up to '{client.role.label}'")
            role = wanted
        self._maybe_prune(now)
        family = uuid.uuid4().hex
        refresh = secrets.token_urlsafe(32)
        self.store.start_family(family, token_hash(refresh), client.client_id, role.label, now,
                                now + self.refresh_ttl_s, self._family_expiry(now, tokens))
        return TokenPair(tokens.issue(client.client_id, role, family, now), tokens.ttl_s,
                         refresh, role)

    def refresh(self, refresh_token: str, now: float) -> TokenPair:
        """Rotate a refresh token: the old one is spent, a new pair is issued."""
        tokens = self._issuer()
        new = secrets.token_urlsafe(32)
        try:
            grant = self.store.rotate(token_hash(refresh_token), token_hash(new), now,
                                      now + self.refresh_ttl_s, self._family_expiry(now, tokens))
        except RefreshRefused as exc:
            if exc.reason == "reused":
                self._mark_revoked(self.store.revoked_families(now))
            raise OAuthError(400, "invalid_grant", _REFUSED[exc.reason]) from None
        client = self.clients.get(grant.client_id)
        if client is None:
            self._revoke_family(grant.family, now, "client removed")
            raise OAuthError(400, "invalid_grant", "The client of this refresh token is no "
                                                   "longer configured")
        role = min(client.role, ROLE_NAMES.get(grant.role, Role.VIEWER))
        return TokenPair(tokens.issue(client.client_id, role, grant.family, now), tokens.ttl_s,
                         new, role)

    def revoke(self, token: str, now: float) -> None:
        """Revoke the family of a refresh token; anything else (an access token too): no-op."""
        # Access tokens travel on every request: holding one must not end its owner's session.
        family = self.store.revoke_token(token_hash(token), now)
        if family is not None:
            self._mark_revoked({family: self._family_until(family, now)})

    def _revoke_family(self, family: str, now: float, reason: str) -> None:
        self.store.revoke_family(family, now, reason)
        self._mark_revoked({family: self._family_until(family, now)})

    def _mark_revoked(self, families: dict[str, float]) -> None:
        with self._revoked_lock:
            self._revoked = {**self._revoked, **families}

    def _family_until(self, family: str, now: float) -> float:
        return self.store.revoked_families(now).get(family, now + self._ttl())

    def _ttl(self) -> float:
        return float(self.tokens.ttl_s) if self.tokens is not None else 0.0

    def _maybe_prune(self, now: float) -> None:
        if now - self._pruned_at < PRUNE_EVERY_S:
            return
        self._pruned_at = now
        self.store.prune(now)
        with self._revoked_lock:
            self._revoked = {f: t for f, t in self._revoked.items() if t > now}


_REFUSED = {
    "unknown": "Unknown refresh token",
    "expired": "The refresh token has expired",
    "revoked": "The refresh token was revoked",
    "reused": "The refresh token was already used; its whole family is now revoked",
}
