"""JSON responses with orjson."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import orjson
from aiohttp import web

from ..errors import INVALID_REQUEST, ApiError, bad_request
from ..process.settings import ServerSettings

if TYPE_CHECKING:
    from ..settings.config import Settings

JSON_TYPE = "application/json"
_OPTS = orjson.OPT_NON_STR_KEYS


def dumps(obj: Any) -> bytes:
    """Serialize to JSON bytes (non-finite floats become null, as everywhere in the gateway)."""
    return orjson.dumps(obj, option=_OPTS)


def json_response(
    obj: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON response from any orjson-serializable object."""
    return web.Response(body=dumps(obj), status=status, content_type=JSON_TYPE, headers=headers)


async def read_limited(request: web.BaseRequest, limit: int | None = None) -> bytes:
    """The raw body of a JSON route, any content type; 413 past server.max_json_body_bytes
    (or `limit`, given for a request that was not routed)."""
    if limit is None:
        limit = max_json_body(cast(web.Request, request))  # no limit given: a routed request
    length = request.content_length
    if length is not None and length > limit:
        raise body_too_large(length, limit)
    raw = await request.read()  # any content type: `curl -d` sends form-urlencoded
    if len(raw) > limit:  # chunked: no Content-Length to check first
        raise body_too_large(len(raw), limit)
    return raw


async def read_json_body(request: web.Request) -> Any:
    """The request body parsed as JSON; ApiError 400 naming the problem otherwise."""
    raw = await read_limited(request)
    if not raw:
        raise bad_request("Request body is empty; a JSON object is required")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"Request body is not valid JSON: {exc}") from None


DEFAULT_MAX_JSON_BODY = 1 << 20
# The app's JSON body limit (make_app sets it from server.max_json_body_bytes).
JSON_BODY_LIMIT: web.AppKey[int] = web.AppKey("json_body_limit", int)


def max_json_body(request: web.Request) -> int:
    """The JSON body limit in bytes (setting server.max_json_body_bytes)."""
    return request.app.get(JSON_BODY_LIMIT, DEFAULT_MAX_JSON_BODY)


def json_body_limit(settings: Settings) -> int:
    """The JSON body limit the settings give (server.max_json_body_bytes)."""
    return settings.typed(ServerSettings.from_settings).max_json_body_bytes


def body_too_large(size: int, limit: int) -> Exception:
    """413 for a body over the JSON limit, whatever its content type."""
    return ApiError(413, INVALID_REQUEST,
                    f"Request body is {size} bytes; bodies of this route are limited to {limit} "
                    "bytes (setting server.max_json_body_bytes)",
                    parameters={"size": size, "limit": limit})
