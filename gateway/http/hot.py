"""Hot answers: a cached GET body served again before routing while its handler's probe holds.

A handler that answers a GET with a cached JSON body offers a probe (`offer`): a function that
repeats the handler's cache lookup and returns the body while it is still the answer the
handler would give, else None. The next GET of the same raw path (path and query) is answered
from the probe before route resolution, the middleware and the handler run. The generic path
answers instead whenever the fast one could differ: a setting that adds per-request work
(authentication, rate limits, CORS, aggregation's forwarding), a stop in progress, a HEAD, or
a request header the generic path reacts to (Range, Expect, conditional headers).

A merged read of the federation offers a probe of the request (`offer_merged`): it looks at
the request headers its body depends on and holds only while the fleet view, hence every
forwarding decision, is the one the handler saw; so it stays fast while aggregation forwards.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .guard import Guard
from .jsonutil import JSON_TYPE

Probe = Callable[[], bytes | None]
RequestProbe = Callable[[web.BaseRequest], bytes | None]
Generic = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]

MAX_PATHS = 4096
EXTRAS_KEY = "hot_answers"
# Request headers the generic path answers differently for (Range: 416 or partial content;
# Expect: 100-continue); conditional ones step aside too, so any validator stays generic.
STEP_ASIDE = ("Range", "Expect", "If-None-Match", "If-Modified-Since", "If-Match",
              "If-Unmodified-Since", "If-Range")


class HotAnswers:
    """The server's request handler: known hot GETs by one lookup, everything else generic."""

    def __init__(self, generic: Generic, guard: Guard, extras: dict[str, Any]) -> None:
        self._generic = generic
        self._guard = guard
        self._extras = extras
        # raw path -> (probe, None) or (None, probe of the request) for a merged read
        self._paths: dict[str, tuple[Probe | None, RequestProbe | None]] = {}
        self.hits = 0

    def store(self, raw_path: str, probe: Probe | None, merged: RequestProbe | None = None
              ) -> None:
        """Remember the probe of a GET the generic path just answered (bounded)."""
        if len(self._paths) >= MAX_PATHS and raw_path not in self._paths:
            self._paths.clear()
        self._paths[raw_path] = (probe, merged)

    def stats(self) -> dict[str, int]:
        """The /health figures: paths remembered and answers served by the fast path."""
        return {"paths": len(self._paths), "hits": self.hits}

    def _clear(self, request: web.BaseRequest, merged: bool) -> bool:
        """Whether nothing but the handler's cached body decides this request's answer."""
        if self._guard.all_checks or (not merged and self._extras.get("forwarder") is not None):
            return False
        drain = self._extras.get("drain")
        if drain is not None and drain.stopping:
            return False
        h = request.headers  # spelled out: a generator over STEP_ASIDE costs more than these
        return not ("Range" in h or "Expect" in h or "If-None-Match" in h
                    or "If-Modified-Since" in h or "If-Match" in h
                    or "If-Unmodified-Since" in h or "If-Range" in h)

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.method == "GET":
            hot = self._paths.get(request.raw_path)
            if hot is not None and self._clear(request, hot[0] is None):
                probe, merged = hot
                body = probe() if probe is not None else merged(request)  # type: ignore[misc]
                if body is not None:
                    self.hits += 1
                    return web.Response(body=body, content_type=JSON_TYPE)
        return await self._generic(request)


def eligible(app: web.Application) -> bool:
    """Whether the app runs only the gateway's own middleware and no response hooks.

    Authentication, rate limiting and CORS each add a middleware or a prepare hook; with any
    of them the fast path is not installed.
    """
    return len(app.middlewares) == 1 and not app.on_response_prepare


def install(app: web.Application, generic: Generic, guard: Guard,
            extras: dict[str, Any]) -> Generic:
    """The request handler to serve the (frozen) app with: HotAnswers when eligible."""
    if not eligible(app):
        return generic
    hot = HotAnswers(generic, guard, extras)
    extras[EXTRAS_KEY] = hot
    extras.setdefault("health", {})["x-vendor-hot-answers"] = hot.stats
    return hot


def offer(extras: dict[str, Any], request: web.Request, probe: Probe) -> None:
    """A handler's cached 200 JSON body for this GET: serve it from `probe` while it holds."""
    hot = extras.get(EXTRAS_KEY)
    if hot is not None and request.method == "GET":
        hot.store(request.raw_path, probe)


def offer_merged(extras: dict[str, Any], request: web.Request, probe: RequestProbe) -> None:
    """A merged read's cached 200 JSON body: serve it from `probe(request)` while it holds,
    aggregation's forwarder notwithstanding (the probe checks that the fleet view is the same)."""
    hot = extras.get(EXTRAS_KEY)
    if hot is not None and request.method == "GET":
        hot.store(request.raw_path, None, probe)
