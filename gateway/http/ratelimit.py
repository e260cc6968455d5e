"""HTTP rate limiting: token buckets global, per client and per client and endpoint.

A bucket of a limit N per minute holds at most N tokens and refills N/60 per second; a request
takes one token from every bucket that applies, or none when any of them is empty (429).
The client is the token subject of a valid bearer token, else the remote address. Every
answer carries X-RateLimit-Limit / -Remaining / -Reset (Unix time when the reported bucket
is full again) of the tightest bucket; a 429 adds Retry-After (seconds until a token).
"""

from __future__ import annotations

import fnmatch
import math
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from ..errors import ApiError
from ..settings.config import ConfigError
from .middleware import error_response
from .routes import API_PREFIX
from .settings import RateLimitSettings
from .state import GatewayState


class TokenBucket:
    """N tokens per minute, at most N stored."""

    __slots__ = ("per_minute", "rate", "tokens", "stamp")

    def __init__(self, per_minute: int, now: float) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.tokens = float(per_minute)
        self.stamp = now

    def refill(self, now: float) -> None:
        """Add the tokens earned since the last look."""
        if now > self.stamp:
            self.tokens = min(float(self.per_minute), self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait_s(self) -> float:
        """Seconds until one token is available."""
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate

    def full_in_s(self) -> float:
        """Seconds until the bucket is full."""
        return (self.per_minute - self.tokens) / self.rate


@dataclass(frozen=True)
class EndpointLimit:
    """`[METHOD ]<path glob>:<per minute>`; the glob is matched below /api/v1, * spans '/'."""

    method: str | None
    pattern: re.Pattern[str]
    per_minute: int
    text: str


def parse_endpoint_limits(entries: Iterable[str]) -> list[EndpointLimit]:
    """Parse rate_limiting.endpoint_limits; ConfigError names the entry."""
    out = []
    for entry in entries:
        spec, sep, number = entry.rpartition(":")
        where = f"setting 'rate_limiting.endpoint_limits': entry {entry!r}"
        if not sep or not number.strip().isdigit() or int(number) < 1:
            raise ConfigError(f"{where}: expected [METHOD ]<path glob>:<requests per minute>")
        method, _, glob = spec.strip().rpartition(" ")
        glob = glob.strip()
        if not glob.startswith("/"):
            raise ConfigError(f"{where}: the path must start with '/'")
        if glob.startswith(API_PREFIX + "/"):
            glob = glob[len(API_PREFIX):]
        out.append(EndpointLimit(method.strip().upper() or None,
                                 re.compile(fnmatch.translate(glob)), int(number), entry))
    return out


@dataclass(frozen=True)
class Decision:
    """The outcome for one request and the figures its headers report."""

    allowed: bool
    limit: int
    remaining: int
    reset_s: float
    retry_after_s: float

    def headers(self, wall: float) -> dict[str, str]:
        """X-RateLimit-* (and Retry-After when refused)."""
        out = {"X-RateLimit-Limit": str(self.limit),
               "X-RateLimit-Remaining": str(self.remaining),
               "X-RateLimit-Reset": str(math.ceil(wall + self.reset_s))}
        if not self.allowed:
            out["Retry-After"] = str(max(1, math.ceil(self.retry_after_s)))
        return out


DECISION: web.RequestKey[Decision] = web.RequestKey("rate_limit", Decision)


class RateLimiter:
    """The buckets; client buckets are kept for the most recent `max_clients` keys."""

    def __init__(self, global_per_minute: int, client_per_minute: int,
                 endpoints: list[EndpointLimit], max_clients: int, now: float) -> None:
        self.global_bucket = TokenBucket(global_per_minute, now)
        self.client_per_minute = client_per_minute
        self.endpoints = endpoints
        self.max_clients = max_clients
        self._buckets: OrderedDict[tuple[str, int], TokenBucket] = OrderedDict()

    def _bucket(self, client: str, slot: int, per_minute: int, now: float) -> TokenBucket:
        key = (client, slot)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(per_minute, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket

    def endpoint_of(self, method: str, path: str) -> int | None:
        """Index of the first endpoint limit matching the request, if any."""
        for i, limit in enumerate(self.endpoints):
            if (limit.method is None or limit.method == method) and limit.pattern.match(path):
                return i
        return None

    def check(self, client: str, method: str, path: str, now: float) -> Decision:
        """Take one token from every applicable bucket, or refuse."""
        buckets = [self.global_bucket, self._bucket(client, -1, self.client_per_minute, now)]
        slot = self.endpoint_of(method, path)
        if slot is not None:
            buckets.append(self._bucket(client, slot, self.endpoints[slot].per_minute, now))
        for b in buckets:
            b.refill(now)
        empty = [b for b in buckets if b.tokens < 1.0]
        if empty:
            worst = max(empty, key=lambda b: b.wait_s())
            return Decision(False, worst.per_minute, 0, worst.full_in_s(), worst.wait_s())
        for b in buckets:
            b.tokens -= 1.0
        # Report the tightest of the buckets this client can exhaust on its own.
        shown = min(buckets[1:], key=lambda b: b.tokens)
        return Decision(True, shown.per_minute, int(shown.tokens), shown.full_in_s(), 0.0)


def rate_limited(decision: Decision) -> ApiError:
    """429 with Retry-After and X-RateLimit-* headers."""
    return ApiError(429, "vendor-error",
                    f"Rate limit of {decision.limit} requests per minute exceeded; retry in "
                    f"{max(1, math.ceil(decision.retry_after_s))} s",
                    vendor_code="x-vendor-rate-limit-exceeded",
                    parameters={"status": 429, "limit_per_minute": decision.limit},
                    headers=decision.headers(time.time()))


ClientKey = Callable[[web.Request], str]


def client_key(peek: Callable[[web.Request], object | None] | None) -> ClientKey:
    """Client identity: the subject of a valid bearer token, else the remote address."""

    def key(request: web.Request) -> str:
        claims = peek(request) if peek is not None else None
        subject = getattr(claims, "subject", None)
        return f"sub:{subject}" if subject else f"addr:{request.remote or ''}"

    return key


def make_middleware(limiter: RateLimiter, client_key: ClientKey, vendor: str) -> Middleware:
    """Refuse past the limits before routing, authentication or handlers run."""

    @web.middleware
    async def rate_limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if path.startswith(API_PREFIX):
            path = path[len(API_PREFIX):] or "/"
        decision = limiter.check(client_key(request), request.method, path, time.monotonic())
        if not decision.allowed:
            return error_response(rate_limited(decision), vendor)
        request[DECISION] = decision
        return await handler(request)

    return rate_limit


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    decision = request.get(DECISION)
    if decision is not None:
        response.headers.update(decision.headers(time.time()))


def make_prepare_hook() -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    """on_response_prepare hook writing the X-RateLimit-* headers of allowed requests."""
    return _headers


def install(app: web.Application, state: GatewayState,
            peek: Callable[[web.Request], object | None] | None) -> None:
    """Rate limiting as an outer middleware, when rate_limiting.enabled; `peek` gives the
    subject of a request's valid bearer token (the auth runtime's)."""
    s = state.settings
    rl = s.typed(RateLimitSettings.from_settings)
    if not rl.enabled:
        return
    limiter = RateLimiter(rl.global_requests_per_minute, rl.client_requests_per_minute,
                          parse_endpoint_limits(rl.endpoint_limits), rl.max_tracked_clients,
                          time.monotonic())
    key = client_key(peek)
    app.middlewares.insert(0, make_middleware(limiter, key, s.vendor))
    app.on_response_prepare.append(make_prepare_hook())
