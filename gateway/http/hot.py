"""Hot answers: a cached GET body served again before routing while its handler's probe holds.

A handler that answers a GET with a cached JSON body offers a probe (`offer`): a function that
repeats the handler's cache lookup and returns the body while it is still the answer the
handler would give, else None. The next GET of the same raw path (path and query) is answered
from the probe before route resolution, the middleware and the handler run. The generic path
answers instead whenever the fast one could differ: a setting that adds per-request work
(authentication, rate limits, CORS, aggregation's forwarding while some entity comes from a
peer), a stop in progress, a HEAD, or a request header the generic path reacts to (Range,
Expect, conditional headers). A robot that runs aggregation only to announce itself has no
entity from a peer, forwards nothing, and keeps the fast path.

A merged read of the federation offers a probe of the request (`offer_merged`): it looks at
the request headers its body depends on and holds only while the fleet view, hence every
forwarding decision, is the one the handler saw; so it stays fast while aggregation forwards.

A POST whose answer is made by a call (a service execution) offers the call (`offer_call`):
a function of the request that returns the handler's own work on it, or None once the route
might resolve differently. The next POST of the same raw path runs that call directly, drained
and with its errors rendered like the middleware's (state.hot_run), while the guard has nothing to
check on writes (no authentication, no lock held or required).

Before all this, a GET whose bytes arrive whole is answered on the wire (hotwire.py, through
`wire_body`) without aiohttp parsing it at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from .guard import Guard
from .hotwire import WireRequest
from .jsonutil import JSON_TYPE

if TYPE_CHECKING:
    from .state import GatewayState

Probe = Callable[[], bytes | None]


class HasHeaders(Protocol):
    """What a merged read's probe reads of a request: aiohttp's or hotwire's WireRequest."""

    @property
    def headers(self) -> Mapping[str, str]: ...


RequestProbe = Callable[[HasHeaders], bytes | None]
Generic = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
Answer = Awaitable[web.StreamResponse]
Call = Callable[[web.BaseRequest], Answer | None]
Run = Callable[[web.BaseRequest, Answer], Answer]

MAX_PATHS = 4096
# Request headers the generic path answers differently for (Range: 416 or partial content;
# Expect: 100-continue); conditional ones step aside too, so any validator stays generic.
STEP_ASIDE = ("Range", "Expect", "If-None-Match", "If-Modified-Since", "If-Match",
              "If-Unmodified-Since", "If-Range")


class HotAnswers:
    """The server's request handler: known hot GETs by one lookup, everything else generic."""

    def __init__(self, generic: Generic, guard: Guard, state: GatewayState) -> None:
        self._generic = generic
        self._guard = guard
        self._state = state
        # raw path -> (probe, None) or (None, probe of the request) for a merged read
        self._paths: dict[str, tuple[Probe | None, RequestProbe | None]] = {}
        self._calls: dict[str, Call] = {}  # raw path -> call of a POST
        self._hits = 0  # answered by __call__
        self.wire = 0  # answered on the wire (hotwire.py)

    def store(self, raw_path: str, probe: Probe | None, merged: RequestProbe | None = None
              ) -> None:
        """Remember the probe of a GET the generic path just answered (bounded)."""
        if len(self._paths) >= MAX_PATHS and raw_path not in self._paths:
            self._paths.clear()
        self._paths[raw_path] = (probe, merged)

    def store_call(self, raw_path: str, call: Call) -> None:
        """Remember the call of a POST the generic path just answered (bounded)."""
        if len(self._calls) >= MAX_PATHS and raw_path not in self._calls:
            self._calls.clear()
        self._calls[raw_path] = call

    def stats(self) -> dict[str, int]:
        """The /health figures: paths remembered, answers served by the fast path and, of
        those, answered on the wire."""
        return {"paths": len(self._paths) + len(self._calls), "hits": self.hits,
                "on_wire": self.wire}

    @property
    def hits(self) -> int:
        """Answers served by the fast path, on the wire or not."""
        return self._hits + self.wire

    def _settings_clear(self, merged: bool) -> bool:
        """Whether no setting or stop adds per-request work the fast path would skip."""
        forwarder = self._state.forward
        if self._guard.all_checks or (not merged and forwarder is not None
                                      and not forwarder.forwards_nothing()):
            return False
        return not self._state.drain.stopping

    def wire_body(self, raw_path: str, data: bytes) -> bytes | None:
        """The cached body of the GET of raw_path in the chunk `data`, which has none of the
        headers the generic path reacts to (hotwire.py checked them), while its probe holds;
        else None."""
        hot = self._paths.get(raw_path)
        if hot is None:
            return None
        probe, merged = hot
        # _settings_clear inline: this runs once per answer on the wire
        if self._guard.all_checks or self._state.drain.stopping:
            return None
        if probe is not None:
            forwarder = self._state.forward
            if forwarder is not None and not forwarder.forwards_nothing():
                return None
            body = probe()
        else:
            body = merged(WireRequest(data))  # type: ignore[misc]
        if body is not None:
            self.wire += 1
        return body

    def _clear(self, request: web.BaseRequest, merged: bool) -> bool:
        """Whether nothing but the handler's cached body decides this request's answer."""
        if not self._settings_clear(merged):
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
                    self._hits += 1
                    return web.Response(body=body, content_type=JSON_TYPE)
        elif request.method == "POST":
            call = self._calls.get(request.raw_path)
            if call is not None and self._guard.quiet_on_writes() \
                    and self._clear(request, False):
                answer = call(request)
                if answer is not None:
                    self._hits += 1
                    run = self._state.hot_run
                    assert run is not None  # offer_call stores calls only with a runner
                    return await run(request, answer)
        return await self._generic(request)


def eligible(app: web.Application) -> bool:
    """Whether the app runs only the gateway's own middleware and no response hooks.

    Authentication, rate limiting and CORS each add a middleware or a prepare hook; with any
    of them the fast path is not installed.
    """
    return len(app.middlewares) == 1 and not app.on_response_prepare


def install(app: web.Application, generic: Generic, guard: Guard,
            state: GatewayState) -> Generic:
    """The request handler to serve the (frozen) app with: HotAnswers when eligible."""
    if not eligible(app):
        return generic
    hot = HotAnswers(generic, guard, state)
    state.hot_answers = hot
    state.health["x-vendor-hot-answers"] = hot.stats
    return hot


def offer(state: GatewayState, request: web.Request, probe: Probe) -> None:
    """A handler's cached 200 JSON body for this GET: serve it from `probe` while it holds."""
    hot = state.hot_answers
    if hot is not None and request.method == "GET":
        hot.store(request.raw_path, probe)


def offer_merged(state: GatewayState, request: web.Request, probe: RequestProbe) -> None:
    """A merged read's cached 200 JSON body: serve it from `probe(request)` while it holds,
    aggregation's forwarder notwithstanding (the probe checks that the fleet view is the same)."""
    hot = state.hot_answers
    if hot is not None and request.method == "GET":
        hot.store(request.raw_path, None, probe)


def offer_call(state: GatewayState, request: web.Request, call: Call) -> None:
    """A handler's work on this POST: run `call(request)` for the next POSTs of its raw path
    while it returns an answer (None: the generic path answers)."""
    hot = state.hot_answers
    if hot is not None and request.method == "POST" and state.hot_run is not None:
        hot.store_call(request.raw_path, call)
