"""Serving the app: errors from the HTTP parser also answer the spec's error body."""

from __future__ import annotations

import time
from typing import Any, cast

from aiohttp import http_exceptions, web, web_protocol, web_server
from aiohttp.web_request import BaseRequest

from ..errors import http_layer_error
from ..process.settings import ServerSettings
from . import hot, hotwire
from .clientlog import LIMITER, client_warning
from .jsonutil import JSON_TYPE, dumps
from .state import STATE

# Large enough that the gateway's own URI limit (setting server.max_uri_length) answers 414.
MAX_LINE = 65536


class _Handler(hotwire.WireHandler):
    __slots__ = ()
    vendor = "vendor"

    def handle_error(
        self, request: BaseRequest, status: int = 500, exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        # Not super(): it logs every client's malformed request with a traceback at ERROR.
        text = (message or "").strip() or f"HTTP error {status}"
        if isinstance(exc, http_exceptions.LineTooLong):
            status, text = 414, f"Request line or header longer than {MAX_LINE} bytes"
        elif status == 400:
            text = f"Malformed HTTP request: {text[:200]}"
        if status >= 500:  # the gateway's own fault: worth a traceback
            self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
        else:
            client_warning(request.remote, f"{status} {' '.join(text.split())}",
                           time.monotonic())
        if request.writer.output_size > 0:
            raise ConnectionError("response already sent; cannot send the error body")
        body = http_layer_error(status, text).body(self.vendor)
        out = web.Response(status=status, body=dumps(body), content_type=JSON_TYPE)
        out.force_close()
        return out


class _Server(web_server.Server):
    hot_answers: hot.HotAnswers | None = None

    def __call__(self) -> web_protocol.RequestHandler:
        return _Handler(self, loop=self._loop, hot_answers=self.hot_answers, **self._kwargs)


class GatewayRunner(web.AppRunner):
    """AppRunner whose low-level parse errors carry the spec's error body."""

    def __init__(self, app: web.Application, vendor: str, client_log_per_minute: int = 10,
                 **kwargs: Any) -> None:
        LIMITER.per_minute = client_log_per_minute
        kwargs.setdefault("handler_cancellation", True)
        kwargs.setdefault("max_line_size", MAX_LINE)
        kwargs.setdefault("max_field_size", MAX_LINE)
        super().__init__(app, **kwargs)
        self._vendor = vendor

    async def _make_server(self) -> web_server.Server:
        server = await super()._make_server()
        server.__class__ = _Server
        _Handler.vendor = self._vendor
        # The app is frozen now: its middlewares and response hooks are final.
        state = self.app[STATE]
        handler = hot.install(self.app, server.request_handler, state.guard, state)
        server.request_handler = handler
        hot_wire = state.settings.typed(ServerSettings.from_settings).hot_wire
        if isinstance(handler, hot.HotAnswers) and hot_wire and hotwire.available():
            cast(_Server, server).hot_answers = handler  # its class set above
        return server
