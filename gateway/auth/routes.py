"""The token endpoints /auth/authorize, /auth/token and /auth/revoke, with OAuth2 answers.

They are open in every `auth.require_auth_for` mode (a token is how one gets a token) and
served with auth off too, for token management. Requests are JSON or form-encoded; client
credentials may also come as HTTP Basic. Errors are RFC 6749 `{"error", "error_description"}`.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, unquote

import orjson
from aiohttp import web

from ..http.jsonutil import JSON_TYPE, dumps
from ..http.routes import Registry
from ..http.state import state_of
from ..model.roles import Role
from .enforce import REALM, runtime_of
from .settings import AuthSettings
from .tokens import Grants, OAuthError

MAX_BODY_BYTES = 16 * 1024
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
FORM_TYPE = "application/x-www-form-urlencoded"

Body = dict[str, str]


def _invalid(description: str) -> OAuthError:
    return OAuthError(400, "invalid_request", description)


def parse_params(content_type: str, raw: bytes) -> Body:
    """Request parameters from a JSON object or a form body; each at most once."""
    if len(raw) > MAX_BODY_BYTES:
        raise _invalid(f"The request body is larger than {MAX_BODY_BYTES} bytes")
    if content_type == JSON_TYPE:
        try:
            obj = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            raise _invalid("The request body is not valid JSON") from None
        if not isinstance(obj, dict):
            raise _invalid("The request body must be a JSON object")
        if any(not isinstance(v, str) for v in obj.values()):
            raise _invalid("Every parameter must be a string")
        return obj
    if content_type in (FORM_TYPE, "application/octet-stream", ""):
        try:
            pairs = parse_qsl(raw.decode(), keep_blank_values=True, strict_parsing=bool(raw))
        except (UnicodeDecodeError, ValueError):
            raise _invalid("The request body is not valid form encoding") from None
        out: Body = {}
        for key, value in pairs:
            if key in out:
                raise _invalid(f"Parameter '{key}' is given more than once")
            out[key] = value
        return out
    raise _invalid(f"Content-Type must be {JSON_TYPE} or {FORM_TYPE}")


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(client_id, client_secret) of an HTTP Basic Authorization header (RFC 6749 2.3.1)."""
    if not header or header[:6].lower() != "basic ":
        return None
    try:
        text = base64.b64decode(header[6:].strip(), validate=True).decode()
    except ValueError:  # binascii.Error, UnicodeDecodeError, or bytes that are not ASCII
        raise OAuthError(401, "invalid_client", "Malformed Basic credentials") from None
    client_id, sep, secret = text.partition(":")
    if not sep:
        raise OAuthError(401, "invalid_client", "Malformed Basic credentials")
    return unquote(client_id), unquote(secret)


def _require(params: Body, name: str) -> str:
    value = params.get(name)
    if not value:
        raise _invalid(f"Parameter '{name}' is required")
    return value


def _grant_type(params: Body, expected: str) -> None:
    grant = _require(params, "grant_type")
    if grant != expected:
        raise OAuthError(400, "unsupported_grant_type",
                         f"grant_type must be '{expected}' here, not '{grant}'")


Action = Callable[[web.Request, Grants, Body], Awaitable[dict[str, Any]]]


def _endpoint(action: Action) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        state = state_of(request)
        if not state.settings.typed(AuthSettings.from_settings).enabled:  # the wire profile may refuse (gateway/wire)
            refused = state.wire.auth.disabled()
            if refused is not None:
                return refused
        try:
            if (request.content_length or 0) > MAX_BODY_BYTES:
                raise _invalid(f"The request body is larger than {MAX_BODY_BYTES} bytes")
            raw = await request.read()
            params = parse_params(request.content_type if request.body_exists else "", raw)
            body = await action(request, runtime_of(request.app).grants, params)
        except OAuthError as exc:
            headers = dict(NO_STORE)
            if exc.status == 401:
                headers["WWW-Authenticate"] = f'Basic realm="{REALM}"'
            return web.Response(
                body=dumps({"error": exc.error, "error_description": exc.description}),
                status=exc.status, content_type=JSON_TYPE, headers=headers)
        return web.Response(body=dumps(body), content_type=JSON_TYPE, headers=NO_STORE)

    handler.__doc__ = action.__doc__
    return handler


async def _authorize(request: web.Request, grants: Grants, params: Body) -> dict[str, Any]:
    """Client credentials grant: an access token and a refresh token."""
    _grant_type(params, "client_credentials")
    basic = basic_credentials(request.headers.get("Authorization"))
    if basic is not None:
        if "client_id" in params or "client_secret" in params:
            raise _invalid("Send client credentials once: Basic or body, not both")
        client_id, secret = basic
    else:
        client_id, secret = _require(params, "client_id"), _require(params, "client_secret")
    scope = params.get("scope") or None
    pair = await asyncio.to_thread(grants.client_credentials, client_id, secret, scope,
                                   time.time())
    return pair.body()


async def _token(request: web.Request, grants: Grants, params: Body) -> dict[str, Any]:
    """Refresh grant: the refresh token is spent and a new pair issued."""
    _grant_type(params, "refresh_token")
    refresh = _require(params, "refresh_token")
    pair = await asyncio.to_thread(grants.refresh, refresh, time.time())
    return pair.body()


async def _revoke(request: web.Request, grants: Grants, params: Body) -> dict[str, Any]:
    """Revoke a refresh token and its whole family; 200 for anything else (no effect)."""
    token = _require(params, "token")
    await asyncio.to_thread(grants.revoke, token, time.time())
    return {"status": "revoked"}


authorize = _endpoint(_authorize)
token = _endpoint(_token)
revoke = _endpoint(_revoke)


def register(reg: Registry) -> None:
    """Declare the token endpoints (open in every mode: extra public)."""
    for path, handler, summary in (
        ("/auth/authorize", authorize, "Client credentials grant"),
        ("/auth/token", token, "Refresh token grant (rotating, single use)"),
        ("/auth/revoke", revoke, "Revoke a refresh token and its family"),
    ):
        reg.add("POST", path, handler, role=Role.VIEWER, summary=summary, tag="auth",
                extra={"public": True})
