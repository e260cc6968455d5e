"""The gateway's MCP endpoint: `/mcp` on the API's port, the SDK loaded on its first use.

Each tool call is a REST request to this gateway's own socket carrying the MCP caller's
Authorization header, so roles, locks, rate limits, request logging and error texts are the
REST API's. The SDK's streamable HTTP transport runs stateless with JSON answers: every POST
stands alone, which suits a gateway behind load balancers and restarts.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Any

from aiohttp import ClientSession, web

from ..errors import ApiError
from ..http.middleware import error_response
from ..http.state import GatewayState
from ..process.settings import ServerSettings
from .asgi import serve as serve_asgi
from .rest import CURRENT, SCOPE_KEY, Rest, loopback_session

if TYPE_CHECKING:
    from ..auth.enforce import AuthRuntime
    from ..bulk_data.service import BulkData
from .settings import McpSettings

log = logging.getLogger(__name__)
PATH = "/mcp"


class McpService:
    """The SDK server, its session manager's lifetime, and the loopback client session."""

    def __init__(self, state: GatewayState, auth: AuthRuntime | None,
                 recordings: BulkData | None) -> None:
        self.state, self.auth, self.recordings = state, auth, recordings
        mcp = state.settings.typed(McpSettings.from_settings)
        self.page_size = mcp.page_size
        self.timeout_s = mcp.request_timeout_sec
        self._lock = asyncio.Lock()
        self._manager: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._session: ClientSession | None = None
        self._ssl: ssl.SSLContext | bool | None = None

    async def _start(self) -> Any:
        async with self._lock:
            if self._manager is not None:
                return self._manager
            from mcp.server.transport_security import (  # noqa: PLC0415 - SDK: on first /mcp use
                TransportSecuritySettings,
            )

            from .env import ToolEnv  # noqa: PLC0415 - the MCP SDK loads on the first /mcp request
            from .server import build  # noqa: PLC0415 - the MCP SDK loads on the first /mcp request

            server = build(ToolEnv(None, self.page_size), version=_version())
            # A refused tool call is the REST request the client-error log already records
            # (rate-limited); the SDK would log each one again at INFO.
            logging.getLogger("mcp").setLevel(logging.WARNING)
            # Origins are the gateway's CORS policy (server.cors.*), not the SDK's.
            server.streamable_http_app(stateless_http=True, json_response=True,
                                       transport_security=TransportSecuritySettings(
                                           enable_dns_rebinding_protection=False))
            manager = server.session_manager
            started = asyncio.Event()

            async def run() -> None:
                async with manager.run():
                    started.set()
                    await self._stop.wait()

            self._task = asyncio.ensure_future(run())
            waiter = asyncio.ensure_future(started.wait())
            await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
            if not started.is_set():
                waiter.cancel()
                self._task.result()  # raises what stopped it
            self._session = loopback_session()
            self._manager = manager
            log.info("MCP server ready at %s", PATH)
            return manager

    def _client_ssl(self) -> ssl.SSLContext:
        """Loopback TLS to this gateway's own socket: not verified (the address is ours)."""
        if not isinstance(self._ssl, ssl.SSLContext):
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            srv = self.state.settings.typed(ServerSettings.from_settings)
            if srv.tls_client_ca_file:  # mutual TLS: present the server's certificate
                ctx.load_cert_chain(srv.tls_cert_file, srv.tls_key_file)
            self._ssl = ctx
        return self._ssl

    def rest_for(self, request: web.Request) -> Rest:
        """The caller's REST client: this gateway's socket, the caller's credentials."""
        transport = request.transport
        sock = transport.get_extra_info("sockname") if transport else None
        host, port = (sock[0], sock[1]) if isinstance(sock, tuple) else (
            "127.0.0.1", self.state.settings.typed(ServerSettings.from_settings).port)
        tls = transport is not None and transport.get_extra_info("sslcontext") is not None
        host = f"[{host}]" if ":" in str(host) else host
        assert self._session is not None
        return Rest(self._session, f"{'https' if tls else 'http'}://{host}:{port}",
                    authorization=request.headers.get("Authorization"),
                    client_id=request.headers.get("X-Client-Id", "mcp"),
                    timeout_s=self.timeout_s,
                    ssl_context=self._client_ssl() if tls else False, recordings=self.recordings)

    def check_caller(self, request: web.Request) -> None:
        """401 before any MCP work: a bad token always, no token where auth covers reads."""
        rt = self.auth
        if rt is None or not rt.enabled or rt.mode == "none":
            return
        if "Authorization" in request.headers or rt.needs_token("GET"):
            rt.authenticate(request)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """POST /mcp: one JSON-RPC message in, its answer out (streamable HTTP, stateless)."""
        try:
            self.check_caller(request)
        except ApiError as err:
            return error_response(err, self.state.vendor)
        manager = await self._start()
        rest = self.rest_for(request)
        token = CURRENT.set(rest)
        try:
            return await serve_asgi(manager.handle_request, request, {SCOPE_KEY: rest})
        finally:
            CURRENT.reset(token)

    async def close(self) -> None:
        """Stop the session manager and close the loopback session."""
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        if self._session is not None:
            await self._session.close()


def _version() -> str:
    try:
        from importlib.metadata import (  # noqa: PLC0415 - importlib.metadata (zipfile, csv) on use
            version,
        )

        return version("diag-gateway")
    except Exception:
        return ""
