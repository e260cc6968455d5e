"""Tokens and roles on every request, from the route registry; enforcement fails closed.

`auth.require_auth_for`: `none` checks nothing, `write` needs a token on POST, PUT, DELETE
(GET is open and a token sent with it is not examined), `all` needs one everywhere. The role a
route needs is its registry row's `role`; plugin-served routes (`extra["plugin"]`) need
admin whatever they declare; a route without a role is refused. Only the token endpoints
(`extra["public"]`) are open in every mode. Requests that match no route answer 401 before
the router's 404/405 whenever the method would need a token, so unknown and known paths
look alike to a caller without a valid token.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from aiohttp.web_urldispatcher import MatchInfoError

from ..errors import ApiError
from ..http.middleware import error_response
from ..http.routes import Route
from ..http.state import GatewayState
from ..model.roles import Role
from ..process.settings import ProcessSettings
from ..settings.config import ConfigError, Settings
from .settings import AuthSettings
from .store import RefreshStore, store_path
from .tokens import AccessTokens, Claims, ClientList, Grants, TokenError, load_keys, parse_clients

UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
REALM = "diag-gateway"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

CLAIMS: web.RequestKey[Claims] = web.RequestKey("auth_claims", Claims)

Check = Callable[[web.Request, Route], Awaitable[None]]


def unauthorized(message: str, error: str | None = None) -> ApiError:
    """401 with an RFC 6750 challenge."""
    challenge = f'Bearer realm="{REALM}"' + (f', error="{error}"' if error else "")
    return ApiError(401, UNAUTHORIZED, message, parameters={"status": 401},
                    headers={"WWW-Authenticate": challenge})


def forbidden(message: str, need: Role | None, have: Role | None) -> ApiError:
    """403 naming the role needed and the role held."""
    params: dict[str, object] = {"status": 403}
    if need is not None:
        params["required_role"] = need.label
    if have is not None:
        params["role"] = have.label
    headers = {"WWW-Authenticate": f'Bearer realm="{REALM}", error="insufficient_scope"'
                                   + (f', scope="{need.label}"' if need is not None else "")}
    return ApiError(403, FORBIDDEN, message, parameters=params, headers=headers)


def required_role(route: Route) -> Role | None:
    """The role a route needs; None (refused) when the row names none."""
    if route.extra.get("plugin"):
        return Role.ADMIN
    role = route.role
    return role if isinstance(role, Role) else None


@dataclass
class AuthRuntime:
    """Settings, token codec and grants shared by the checks and the /auth routes."""

    enabled: bool
    mode: str
    algorithm: str
    tokens: AccessTokens | None
    grants: Grants

    def needs_token(self, method: str) -> bool:
        """Whether a request with this method must carry a valid token."""
        if not self.enabled or self.mode == "none":
            return False
        return self.mode == "all" or method not in SAFE_METHODS

    def authenticate(self, request: web.BaseRequest) -> Claims:
        """The claims of the request's bearer token; 401 when missing, bad or expired."""
        header = request.headers.get("Authorization")
        if header is None:
            raise unauthorized("This request needs 'Authorization: Bearer <access token>'")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise unauthorized("Expected 'Authorization: Bearer <access token>'",
                               "invalid_request")
        if self.tokens is None:
            raise unauthorized("This gateway has no key to verify tokens", "invalid_token")
        try:
            claims = self.tokens.verify(token, time.time())
        except TokenError as exc:
            raise unauthorized(str(exc), "invalid_token") from None
        if self.grants.is_revoked(claims.family):
            raise unauthorized("The access token was revoked", "invalid_token")
        return claims

    def peek(self, request: web.BaseRequest) -> Claims | None:
        """The claims of a valid bearer token, or None; never raises."""
        header = request.headers.get("Authorization")
        if self.tokens is None or not header or header[:7].lower() != "bearer ":
            return None
        claims = self.tokens.peek(header[7:].strip(), time.time())
        if claims is None or self.grants.is_revoked(claims.family):
            return None
        return claims


def build_runtime(settings: Settings) -> AuthRuntime:
    """The auth runtime of these settings; ConfigError names a bad auth.* setting."""
    a = settings.typed(AuthSettings.from_settings)
    keys = load_keys(a.jwt_algorithm, a.jwt_secret, a.jwt_public_key, required=a.enabled)
    tokens = AccessTokens(keys, a.issuer, a.token_expiry_seconds, a.max_token_lifetime_seconds) \
        if keys is not None else None
    clients = ClientList(parse_clients(a.clients))
    store = RefreshStore(store_path(settings.typed(ProcessSettings.from_settings).state_dir))
    grants = Grants(tokens, clients, store, a.refresh_token_expiry_seconds)
    return AuthRuntime(a.enabled, a.require_auth_for, a.jwt_algorithm, tokens, grants)


def make_check(rt: AuthRuntime) -> Check:
    """The guard check: token and role for the matched route."""

    async def check_auth(request: web.Request, route: Route) -> None:
        if route.extra.get("public"):
            return
        need = required_role(route)
        if not rt.needs_token(route.method):
            if need is None:
                raise forbidden(f"{route.method} {route.path} names no role; refused", None, None)
            return
        claims = rt.authenticate(request)
        if need is None:
            raise forbidden(f"{route.method} {route.path} names no role; refused", None,
                            claims.role)
        if claims.role < need:
            raise forbidden(f"Role '{claims.role.label}' may not {route.method} {route.path}; "
                            f"it needs '{need.label}'", need, claims.role)
        request[CLAIMS] = claims

    return check_auth


def make_unmatched_middleware(rt: AuthRuntime, vendor: str) -> Middleware:
    """401 instead of 404/405 for unrouted requests that would need a token and lack one."""

    @web.middleware
    async def refuse_unmatched(request: web.Request, handler: Handler) -> web.StreamResponse:
        if isinstance(request.match_info, MatchInfoError) and rt.needs_token(request.method):
            try:
                rt.authenticate(request)
            except ApiError as err:
                return error_response(err, vendor)
        return await handler(request)

    return refuse_unmatched


def claims_of(request: web.Request) -> Claims | None:
    """The verified claims of a request that needed a token (None on open requests)."""
    return request.get(CLAIMS)


AUTH: web.AppKey[AuthRuntime] = web.AppKey("auth", AuthRuntime)


def runtime_of(app: web.Application) -> AuthRuntime:
    """The auth runtime installed on an app."""
    return app[AUTH]


def install(app: web.Application, state: GatewayState) -> None:
    """Build the auth runtime; with auth on, check every routed and unrouted request."""
    rt = build_runtime(state.settings)
    app[AUTH] = rt
    app.on_cleanup.append(_close_store(rt.grants.store))
    if not rt.enabled:
        return
    state.features.add("auth")
    rt.grants.store.storage = state.storage  # a token that cannot be stored: 507, /health
    try:
        rt.grants.load(time.time())
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(f"setting 'state_dir': cannot open the refresh-token store "
                          f"{rt.grants.store.path}: {exc}") from None
    if rt.mode == "none":
        return
    # First of all checks: nothing else (locks, providers) runs for an unauthenticated caller.
    state.guard.all_checks.insert(0, make_check(rt))
    app.middlewares.insert(0, make_unmatched_middleware(rt, state.vendor))


def _close_store(store: RefreshStore) -> Callable[[web.Application], Awaitable[None]]:
    async def close(app: web.Application) -> None:
        store.close()

    return close
