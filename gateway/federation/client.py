"""One pooled keep-alive HTTP client per peer, with budgets and failure reasons."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from multidict import CIMultiDictProxy

from ..http import client_tls
from ..process.waits import within
from .health import CANCELED, ERROR_STATUS, INVALID_RESPONSE, TIMEOUT, TOO_LARGE, UNREACHABLE
from .rawhttp import TooLarge, Unsupported, pool_for
from .settings import Budgets

API_PREFIX = "/api/v1"
# Connections kept per peer: fan-out, forwards and long-lived SSE relays share them.
POOL_PER_PEER = 64
KEEPALIVE_S = 30.0
CHUNK = 64 * 1024


class PeerError(Exception):
    """A peer call that produced no usable answer; `reason` is a spec peer_failures reason."""

    def __init__(self, reason: str, message: str = "", status: int | None = None) -> None:
        super().__init__(message or reason)
        self.reason = reason
        self.status = status


def classify(exc: BaseException) -> str:
    """The peer_failures reason of an exception raised by a peer call."""
    if isinstance(exc, PeerError):
        return exc.reason
    if isinstance(exc, asyncio.CancelledError):
        return CANCELED
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return TIMEOUT
    if isinstance(exc, (aiohttp.ClientPayloadError, aiohttp.ClientResponseError, ValueError)):
        return INVALID_RESPONSE
    return UNREACHABLE


def base_url(url: str) -> str:
    """A peer's base URL without a trailing slash or API prefix."""
    url = url.strip().rstrip("/")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    return url


@dataclass
class Answer:
    """Status, headers and (capped) body of a peer answer."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; PeerError invalid-response otherwise."""
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError as exc:
            raise PeerError(INVALID_RESPONSE, f"not JSON: {exc}") from None


class PeerClient:
    """A peer's connection pool; every call has a budget and a body size cap."""

    def __init__(self, url: str, budgets: Budgets, max_bytes: int,
                 fixed_headers: dict[str, str] | None = None) -> None:
        self.url = base_url(url)
        self.budgets = budgets
        self.max_bytes = max_bytes
        # on every call, whoever asked (a robot tunnel's secret: connect_in.py)
        self.fixed_headers = dict(fixed_headers or {})
        self._session: aiohttp.ClientSession | None = None
        self._raw = pool_for(self.url, self.fixed_headers)  # fan-out reads of http:// peers

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pooled keep-alive session (created on first use, on the running loop)."""
        if self._session is None or self._session.closed:
            client_tls.load_ca()  # done by the federation service at start
            connector = aiohttp.TCPConnector(limit=POOL_PER_PEER, limit_per_host=POOL_PER_PEER,
                                             keepalive_timeout=KEEPALIVE_S)
            self._session = aiohttp.ClientSession(
                connector=connector, auto_decompress=False, trust_env=False,
                headers=self.fixed_headers,
                skip_auto_headers=("Accept-Encoding", "User-Agent"),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.budgets.timeout_s,
                                              connect=self.budgets.timeout_s))
        return self._session

    def api(self, path: str) -> str:
        """Absolute URL of a path below /api/v1 (path starts with '/')."""
        return self.url + API_PREFIX + path

    async def get(self, path: str, *, budget_s: float, headers: dict[str, str] | None = None,
                  max_bytes: int | None = None) -> Answer:
        """GET within the budget; PeerError with the reason when there is no answer."""
        try:
            return await within(self._get(path, headers or {}, max_bytes or self.max_bytes),
                                budget_s)
        except PeerError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise PeerError(classify(exc), f"{type(exc).__name__}: {exc}") from None

    async def get_body(self, path: str, *, budget_s: float, headers: dict[str, str],
                       max_bytes: int) -> tuple[int, bytes]:
        """(status, body) of a GET within the budget, on the pooled GET client when it can
        read the answer (a health probe needs no headers); PeerError otherwise."""
        if self._raw is not None:
            try:
                return await within(
                    self._raw.get(API_PREFIX + path, headers, max_bytes), budget_s)
            except Unsupported:
                pass
            except TooLarge as exc:
                raise PeerError(TOO_LARGE, str(exc)) from None
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise PeerError(classify(exc), f"{type(exc).__name__}: {exc}") from None
        answer = await self.get(path, budget_s=budget_s, headers=headers, max_bytes=max_bytes)
        return answer.status, answer.body

    async def _get(self, path: str, headers: dict[str, str], cap: int) -> Answer:
        async with self.session.get(self.api(path), headers=headers,
                                    allow_redirects=False) as resp:
            length = resp.content_length
            if length is not None and length > cap:
                raise PeerError(TOO_LARGE, f"answer of {length} bytes exceeds {cap}")
            parts: list[bytes] = []
            size = 0
            while True:
                chunk = await resp.content.read(CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > cap:
                    raise PeerError(TOO_LARGE, f"answer exceeds {cap} bytes")
                parts.append(chunk)
            return Answer(resp.status, resp.headers, b"".join(parts))

    async def get_items(self, path: str, *, budget_s: float,
                        headers: dict[str, str] | None = None) -> dict[str, Any] | None:
        """A list envelope; None when the peer lacks the route (404/501: members omitted)."""
        answer = await self.get(path, budget_s=budget_s, headers=headers)
        return list_envelope(answer.status, answer.body)

    def send_read(self, path: str, headers: dict[str, str], sink: Any, tag: int) -> Any:
        """A fan-out GET sent at once on an idle pooled connection, its answer given to
        sink(conn, (status, body) or None, exception or None) with conn.tag = tag; the
        connection, or None when there is none (then `read_raw`). Give the connection back
        with `finish_read`."""
        if self._raw is None:
            return None
        return self._raw.send(API_PREFIX + path, headers, self.max_bytes, sink, tag)

    def finish_read(self, conn: Any, answered: bool) -> None:
        """Return a connection of `send_read` (closed unless its answer came whole)."""
        assert self._raw is not None
        self._raw.finish(conn, answered)

    async def read_raw(self, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        """(status, body) of a fan-out GET without a budget of its own; PeerError otherwise."""
        try:
            if self._raw is not None:
                try:
                    return await self._raw.get(API_PREFIX + path, headers, self.max_bytes)
                except Unsupported:
                    pass
            answer = await self._get(path, headers, self.max_bytes)
            return answer.status, answer.body
        except TooLarge as exc:
            raise PeerError(TOO_LARGE, str(exc)) from None
        except (PeerError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise PeerError(classify(exc), f"{type(exc).__name__}: {exc}") from None

    async def read_items(self, path: str, headers: dict[str, str]) -> dict[str, Any] | None:
        """get_items without a budget of its own: the fan-out bounds all peers at once."""
        status, body = await self.read_raw(path, headers)
        return list_envelope(status, body)

    async def close(self) -> None:
        """Close the pool."""
        if self._raw is not None:
            self._raw.close()
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def raw_error(exc: BaseException) -> PeerError:
    """The PeerError of a failed `send_read` answer."""
    if isinstance(exc, TooLarge):
        return PeerError(TOO_LARGE, str(exc))
    return PeerError(classify(exc), f"{type(exc).__name__}: {exc}")


def list_envelope(status: int, raw: bytes) -> dict[str, Any] | None:
    """A peer's list envelope; None when it lacks the route (404/501); PeerError otherwise."""
    if status in (404, 501):
        return None
    if not 200 <= status < 300:
        raise PeerError(ERROR_STATUS, f"status {status}", status)
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise PeerError(INVALID_RESPONSE, f"not JSON: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("items"), list):
        raise PeerError(INVALID_RESPONSE, "not a list envelope")
    return body
