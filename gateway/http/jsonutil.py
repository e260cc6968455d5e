"""JSON responses with orjson."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

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


async def read_json_body(request: web.Request) -> Any:
    """The request body parsed as JSON; ApiError 400 naming the problem otherwise."""
    from .errors import bad_request

    raw = await request.read()
    if not raw:
        raise bad_request("Request body is empty; a JSON object is required")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"Request body is not valid JSON: {exc}") from None
