"""CORS: preflights answered before authentication, allow headers on every answer.

On when `cors.allowed_origins` is non-empty. Origins match exactly (scheme, host, port); `*`
allows any origin but is refused together with `cors.allow_credentials` (a browser would send
credentials to any site's requests). Headers are set in on_response_prepare, so streamed (SSE)
and error answers carry them too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from ..errors import ApiError
from ..settings.config import ConfigError, Settings
from .middleware import error_response
from .settings import CorsSettings
from .state import GatewayState

# Response headers a browser script may read: downloads, 201/202 locations, rate limits.
EXPOSED = ("Content-Disposition", "Content-Range", "Content-Length", "Location", "Retry-After",
           "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "WWW-Authenticate")
_VARY = "Origin"
_PREFLIGHT_VARY = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"


def _origin(text: str) -> str:
    """A configured origin as browsers serialize one (lower case, no trailing slash)."""
    return text.strip().rstrip("/").lower()


@dataclass(frozen=True)
class CorsPolicy:
    """Allowed origins, methods and headers, credentials and preflight max age."""

    origins: frozenset[str]
    any_origin: bool
    methods: tuple[str, ...]
    headers: tuple[str, ...]
    credentials: bool
    max_age_s: int

    @classmethod
    def from_settings(cls, settings: Settings) -> CorsPolicy | None:
        """The policy, or None when CORS is off; ConfigError for '*' with credentials."""
        cors = settings.typed(CorsSettings.from_settings)
        origins = [_origin(o) for o in cors.allowed_origins]
        if not origins:
            return None
        any_origin = "*" in origins
        credentials = cors.allow_credentials
        if any_origin and credentials:
            raise ConfigError("setting 'cors.allow_credentials': cannot be true while "
                              "cors.allowed_origins contains '*'; list the origins")
        methods = tuple(dict.fromkeys(m.strip().upper() for m in cors.allowed_methods))
        vendor_header = f"X-{settings.vendor.capitalize()}-No-Fan-Out"
        headers = tuple(dict.fromkeys([*cors.allowed_headers, vendor_header]))
        return cls(frozenset(o for o in origins if o != "*"), any_origin, methods, headers,
                   credentials, cors.max_age_seconds)

    def allows(self, origin: str) -> bool:
        """Whether requests from this origin may be read cross-origin: byte for byte one of
        the configured origins (a browser sends the serialized origin; anything else is not
        one)."""
        return self.any_origin or origin in self.origins

    def _allow_origin(self, origin: str) -> dict[str, str]:
        if self.any_origin and not self.credentials:
            return {"Access-Control-Allow-Origin": "*"}
        out = {"Access-Control-Allow-Origin": origin}
        if self.credentials:
            out["Access-Control-Allow-Credentials"] = "true"
        return out

    def preflight(self, origin: str, method: str,
                  requested: Iterable[str]) -> dict[str, str] | str:
        """Headers of an accepted preflight, or the reason it is refused."""
        if not self.allows(origin):
            return f"origin '{origin}' is not allowed"
        if method.upper() not in self.methods:
            return f"method '{method}' is not allowed"
        allowed = {h.lower() for h in self.headers}
        for name in requested:
            if name.lower() not in allowed:
                return f"header '{name}' is not allowed"
        out = self._allow_origin(origin)
        out["Access-Control-Allow-Methods"] = ", ".join(self.methods)
        out["Access-Control-Allow-Headers"] = ", ".join(self.headers)
        out["Access-Control-Max-Age"] = str(self.max_age_s)
        out["Vary"] = _PREFLIGHT_VARY
        return out

    def response_headers(self, origin: str | None) -> dict[str, str]:
        """CORS headers of an actual (non-preflight) response."""
        vary = {} if self.any_origin and not self.credentials else {"Vary": _VARY}
        if origin is None or not self.allows(origin):
            return vary
        out = self._allow_origin(origin)
        out["Access-Control-Expose-Headers"] = ", ".join(EXPOSED)
        out.update(vary)
        return out


def _requested_headers(value: str | None) -> list[str]:
    return [h.strip() for h in (value or "").split(",") if h.strip()]


def make_middleware(policy: CorsPolicy, vendor: str) -> Middleware:
    """Answers preflights (204, or 403 with the reason) before any other check runs."""

    @web.middleware
    async def cors_preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        want = request.headers.get("Access-Control-Request-Method")
        if request.method != "OPTIONS" or origin is None or want is None:
            return await handler(request)
        answer = policy.preflight(origin, want,
                                  _requested_headers(request.headers.get(
                                      "Access-Control-Request-Headers")))
        if isinstance(answer, str):
            err = ApiError(403, "forbidden", f"CORS preflight refused: {answer}",
                           parameters={"status": 403, "origin": origin})
            return error_response(err, vendor)
        return web.Response(status=204, headers=answer)

    return cors_preflight


def make_prepare_hook(
    policy: CorsPolicy,
) -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    """on_response_prepare hook adding CORS headers to actual responses."""

    async def cors_headers(request: web.Request, response: web.StreamResponse) -> None:
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            return
        for key, value in policy.response_headers(request.headers.get("Origin")).items():
            if key == "Vary" and "Vary" in response.headers:
                if value not in response.headers["Vary"]:
                    response.headers["Vary"] = response.headers["Vary"] + ", " + value
                continue
            response.headers[key] = value

    return cors_headers


def install(app: web.Application, state: GatewayState) -> None:
    """CORS as the outermost middleware (install it last), when configured."""
    policy = CorsPolicy.from_settings(state.settings)
    if policy is None:
        return
    app.middlewares.insert(0, make_middleware(policy, state.vendor))
    app.on_response_prepare.append(make_prepare_hook(policy))
