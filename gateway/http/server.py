"""Serving the app: errors from the HTTP parser also answer the spec's error body."""

from __future__ import annotations

from typing import Any

from aiohttp import http_exceptions, web, web_protocol, web_server
from aiohttp.web_request import BaseRequest

from .errors import http_layer_error
from .jsonutil import JSON_TYPE, dumps

# Large enough that the gateway's own URI limit (setting server.max_uri_length) answers 414.
MAX_LINE = 65536


class _Handler(web_protocol.RequestHandler):
    vendor = "vendor"

    def handle_error(
        self, request: BaseRequest, status: int = 500, exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        resp = super().handle_error(request, status, exc, message)
        text = (message or "").strip() or f"HTTP error {status}"
        if isinstance(exc, http_exceptions.LineTooLong):
            status, text = 414, f"Request line or header longer than {MAX_LINE} bytes"
        elif status == 400:
            text = f"Malformed HTTP request: {text[:200]}"
        body = http_layer_error(status, text).body(self.vendor)
        out = web.Response(status=status, body=dumps(body), content_type=JSON_TYPE)
        out.force_close()
        del resp
        return out


class _Server(web_server.Server):
    def __call__(self) -> web_protocol.RequestHandler:
        return _Handler(self, loop=self._loop, **self._kwargs)


class GatewayRunner(web.AppRunner):
    """AppRunner whose low-level parse errors carry the spec's error body."""

    def __init__(self, app: web.Application, vendor: str, **kwargs: Any) -> None:
        kwargs.setdefault("handler_cancellation", True)
        kwargs.setdefault("max_line_size", MAX_LINE)
        kwargs.setdefault("max_field_size", MAX_LINE)
        super().__init__(app, **kwargs)
        self._vendor = vendor

    async def _make_server(self) -> web_server.Server:
        server = await super()._make_server()
        server.__class__ = _Server
        _Handler.vendor = self._vendor
        return server
