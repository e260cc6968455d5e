"""The request middleware: URI checks, Range syntax, the guard, and error rendering."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_urldispatcher import MatchInfoError

from ..errors import ApiError, bad_request, http_layer_error, os_error, storage_error
from ..model.ids import invalid_id_reason
from ..process.settings import ServerSettings
from ..process.storage import StorageWriteError
from .clientlog import client_warning
from .jsonutil import JSON_TYPE, dumps
from .ranges import RangeError, parse_range
from .routes import API_PREFIX, ENTITY_PARAM

if TYPE_CHECKING:
    from .state import GatewayState

log = logging.getLogger(__name__)

_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NON_ASCII = re.compile(r"%[89A-Fa-f]")
_ID_PARAMS = frozenset({*ENTITY_PARAM.values(), "sub_id"})


def error_response(err: ApiError, vendor: str) -> web.Response:
    """Render an ApiError as the spec's error body."""
    return web.Response(
        body=dumps(err.body(vendor)), status=err.status, content_type=JSON_TYPE,
        headers=err.headers,
    )


def check_uri(raw_path: str, max_len: int) -> None:
    """414 for an oversize URI, 400 for malformed percent-encoding."""
    if len(raw_path) > max_len:
        raise http_layer_error(414, f"Request URI is {len(raw_path)} bytes; the limit is {max_len}")
    if "%" in raw_path:
        path = raw_path.partition("?")[0]
        if _BAD_PERCENT.search(path):
            raise bad_request(
                "Malformed percent-encoding in the request path: '%' must be followed by two "
                "hex digits (encode '/' inside a topic or parameter name as %2F)",
                path=path,
            )
        if _NON_ASCII.search(path):
            try:
                unquote_to_bytes(path).decode("utf-8")
            except UnicodeDecodeError:
                raise bad_request("The request path decodes to invalid UTF-8",
                                  path=path) from None


def _collection_of(path: str, collections: dict[str, set[str]]
                   ) -> tuple[str, str, str] | None:
    """(entity type, id, collection) of a path naming a collection its type does not serve."""
    parts = path[len(API_PREFIX):].strip("/").split("/")
    if len(parts) < 3 or parts[0] not in ENTITY_PARAM:
        return None
    served = collections.get(parts[2])
    return (parts[0], parts[1], parts[2]) if served and parts[0] not in served else None


def allow_header(exc: Any) -> str:
    """The Allow value of aiohttp's 405: its methods, HEAD wherever GET is served."""
    methods = set(getattr(exc, "allowed_methods", ()) or ())
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def _names_docs(route: Any, match_info: Any) -> bool:
    """Whether a matched route took the trailing `docs` of a path as its last item id."""
    if route.multi_segment:
        return True
    last = route.path.rstrip("/").rsplit("/", 1)[-1]
    return last.startswith("{") and match_info.get(last[1:-1]) == "docs"


def error_answer(request: web.BaseRequest, exc: Exception, vendor: str) -> web.StreamResponse:
    """The answer to an exception a handler raised: the spec's error body (re-raises a
    non-error HTTP exception such as a redirect)."""
    if isinstance(exc, ApiError):
        return error_response(exc, vendor)
    if isinstance(exc, web.HTTPException):
        if exc.status < 400:
            raise exc
        layer = http_layer_error(exc.status, exc.reason)
        if exc.status == 405:
            layer.headers = {"Allow": allow_header(exc)}
        return error_response(layer, vendor)
    if isinstance(exc, HttpProcessingError):  # the client's malformed body (multipart headers)
        status = exc.code if 400 <= exc.code < 500 else 400
        text = " ".join(str(exc.message).split())[:200]
        client_warning(request.remote, f"{request.method} {request.path}: {text}",
                       time.monotonic())
        return error_response(http_layer_error(status, f"Malformed request body: {text}"),
                              vendor)
    if isinstance(exc, StorageWriteError):  # a store's write failed (booked by the store)
        return error_response(storage_error(exc), vendor)
    if isinstance(exc, OSError):  # never the spec's resource-not-found for a disk error
        log.error("Unhandled %s on %s %s", type(exc).__name__, request.method, request.path,
                  exc_info=exc)
        return error_response(os_error(exc), vendor)
    log.error("Unhandled error on %s %s", request.method, request.path, exc_info=exc)
    return error_response(
        http_layer_error(500, "Internal error while handling the request; see the "
                              "gateway log"), vendor)


def make_middleware(state: GatewayState) -> Any:  # noqa: C901 - counts its inner middleware
    """The gateway's single middleware; state gives vendor, max URI length, routes and guard."""
    vendor = state.settings.vendor
    max_uri = state.settings.typed(ServerSettings.from_settings).max_uri_length
    routes = state.route_table
    guard = state.guard
    drain = state.drain  # bounded stop (cli.serve)
    state.health["x-vendor-requests"] = drain.stats

    # Raw paths that passed check_uri recently: a set lookup instead of two regex scans on
    # the hot path (bounded; cleared when full).
    checked: set[str] = set()
    # Path parameters holding entity ids, per route: checked against the spec's charset.
    # (Keyed by identity: a frozen dataclass hashes every field on each lookup.)
    id_params = {id(r): [p for p in r.params if p in _ID_PARAMS] for r in routes.values()}
    # Entity collections and the entity types serving each (for collection-not-supported).
    collections: dict[str, set[str]] = {}
    for r in routes.values():
        parts = r.path.strip("/").split("/")
        if len(parts) >= 3 and parts[0] in ENTITY_PARAM and "{" not in parts[2]:
            collections.setdefault(parts[2], set()).add(parts[0])

    @web.middleware
    async def middleware(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            raw = request.raw_path
            if raw not in checked:
                check_uri(raw, max_uri)
                if len(checked) >= 4096:
                    checked.clear()
                checked.add(raw)
            rng = request.headers.get("Range")
            if rng is not None:
                try:
                    parse_range(rng)
                except RangeError as exc:
                    raise http_layer_error(416, str(exc)) from None
            match_info = request.match_info
            if isinstance(match_info, MatchInfoError):
                status = match_info.http_exception.status
                if status == 405:  # the medkit profile answers 404 as the reference does
                    raise state.wire.errors.method_not_served(
                        request.method, request.path, allow_header(match_info.http_exception))
                unsupported = _collection_of(request.path, collections)
                if unsupported is not None:  # served for other entity types only
                    refused = state.wire.errors.unsupported_collection(*unsupported)
                    if refused is not None:
                        raise refused
                raise http_layer_error(status, f"No resource at {request.path}")
            route = routes.get(match_info.route)
            if route is not None and request.method in ("GET", "HEAD") \
                    and raw.partition("?")[0].endswith("/docs") and _names_docs(route, match_info):
                # `/apps/x/data/docs` is the scoped document, not a topic named `docs` (an
                # encoded topic path keeps its %2F and never ends in `/docs`); likewise
                # `/apps/x/triggers/docs` is not a trigger named `docs`.
                route = state.docs_route
                handler = route.handler
            if route is not None:
                if request.method == "HEAD" and route.streaming:
                    # an event stream never ends: HEAD answers with its headers only
                    return web.Response(status=200, content_type="text/event-stream",
                                        headers={"Cache-Control": "no-cache"})
                if guard.active:
                    await guard(request, route)
                for param in id_params.get(id(route), ()):
                    reason = invalid_id_reason(match_info[param])
                    if reason is not None:
                        raise state.wire.errors.invalid_entity_id(
                            match_info[param], reason,
                            param if route.extra.get("nested_discovery") else None)
                # Aggregation: requests for peer-owned entities and items go to the peer.
                forward = state.forward
                if forward is not None:
                    answer = await drain.run(forward(request, route), False)
                    if answer is not None:
                        return answer
            return await drain.run(handler(request), route is not None and route.streaming)
        except Exception as exc:
            return error_answer(request, exc, vendor)

    async def run_routed(request: web.BaseRequest, call: Awaitable[web.StreamResponse]
                         ) -> web.StreamResponse:
        """A call of a request the fast path routed (gateway/http/hot.py): drained and with
        its errors rendered like the middleware's."""
        try:
            return await drain.run(call, False)
        except Exception as exc:
            return error_answer(request, exc, vendor)

    state.hot_run = run_routed
    return middleware
