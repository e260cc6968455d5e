"""The REST API as the MCP tools see it: one request at a time, errors as RestError."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson
from aiohttp import ClientSession, ClientTimeout, TCPConnector

from ..http.routes import API_PREFIX, ENTITY_TYPES

if TYPE_CHECKING:
    from ..bulk_data.service import BulkData

USER_AGENT = "diag-gateway-mcp"
SCOPE_KEY = "diag.rest"  # the ASGI scope key the gateway's /mcp handler puts the caller's Rest in
MAX_ERROR_TEXT = 500  # characters of a non-JSON error body kept in the message


class RestError(Exception):
    """A REST answer >= 400 (or no answer): status, error_code and the API's message."""

    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(f"{status} {error_code}: {message}")
        self.status = status
        self.error_code = error_code
        self.message = message


class EntityPathError(ValueError):
    """An entity path that names no entity collection."""


def entity_path(entity: str) -> str:
    """`apps/temp_sensor` (or `/api/v1/apps/temp_sensor`) -> `/apps/temp_sensor`, id quoted."""
    text = entity.strip().strip("/")
    if text.startswith(API_PREFIX.strip("/") + "/"):
        text = text[len(API_PREFIX.strip("/")) + 1:]
    kind, _, ident = text.partition("/")
    if kind not in ENTITY_TYPES or not ident or "/" in ident:
        raise EntityPathError(
            f"entity {entity!r}: expected <type>/<id> with type one of {', '.join(ENTITY_TYPES)} "
            "(e.g. apps/temp_sensor, components/vm)")
    return f"/{kind}/{quote(ident, safe='')}"


def segment(value: str) -> str:
    """One path segment: a topic or parameter name quoted whole."""
    return quote(value, safe="")


def error_of(status: int, body: bytes) -> RestError:
    """The API's error body (`error_code`, `message`) as a RestError."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict) and "message" in data:
        return RestError(status, str(data.get("error_code", "error")), str(data["message"]))
    text = body.decode("utf-8", "replace").strip()[:MAX_ERROR_TEXT]
    return RestError(status, "error", text or f"HTTP {status}")


@dataclass
class Rest:
    """REST calls to one gateway with one caller's credentials.

    `session` is shared and owned by whoever made it; `recordings` is the serving gateway's
    bulk data (its recorder) when the tools run inside it (richer recording summaries), None
    over the network.
    """

    session: ClientSession
    base: str  # scheme://host:port, without /api/v1
    authorization: str | None = None
    client_id: str = "mcp"
    timeout_s: float = 30.0
    ssl_context: ssl.SSLContext | bool | None = None
    recordings: BulkData | None = None
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    async def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                   body: Any = None, tool: str = "") -> Any:
        """The decoded JSON answer (None for an empty one); RestError for >= 400."""
        headers = {"User-Agent": f"{USER_AGENT}/{tool}" if tool else USER_AGENT,
                   "Accept": "application/json", **self.extra_headers}
        if self.authorization:
            headers["Authorization"] = self.authorization
        if method != "GET":
            headers["X-Client-Id"] = self.client_id
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = orjson.dumps(body)
        query = {k: str(v).lower() if isinstance(v, bool) else str(v)
                 for k, v in (params or {}).items() if v is not None}
        url = self.base + API_PREFIX + path
        try:
            async with self.session.request(
                    method, url, params=query, data=data, headers=headers,
                    timeout=ClientTimeout(total=self.timeout_s),
                    ssl=self.ssl_context if self.ssl_context is not None else True) as resp:
                raw = await resp.read()
                status = resp.status
        except asyncio.TimeoutError:
            raise RestError(504, "timeout", f"{method} {path}: no answer in "
                                            f"{self.timeout_s:g} s") from None
        except OSError as exc:
            raise RestError(502, "unreachable", f"{method} {path}: {exc}") from None
        if status >= 400:
            raise error_of(status, raw)
        if not raw:
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"text": raw.decode("utf-8", "replace")[:MAX_ERROR_TEXT]}


def loopback_session(limit: int = 16) -> ClientSession:
    """A client session for calls to a gateway (its own connection pool)."""
    return ClientSession(connector=TCPConnector(limit=limit), json_serialize=lambda o: orjson.dumps(o).decode())


# The caller's REST client while the gateway serves an /mcp request (resources and prompts
# have no request scope to read it from).
CURRENT: ContextVar[Rest | None] = ContextVar("diag_mcp_rest", default=None)
