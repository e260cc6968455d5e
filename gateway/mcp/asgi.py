"""One aiohttp request served by an ASGI application (the SDK's streamable HTTP transport)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]],
                    Callable[[Message], Awaitable[None]]], Awaitable[None]]


HOP_HEADERS = (b"content-length", b"transfer-encoding", b"connection")


def _addr(info: Any) -> tuple[str, int] | None:
    if isinstance(info, (tuple, list)) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return None


def scope_of(request: web.Request, extra: dict[str, Any] | None = None) -> Scope:
    """The ASGI HTTP scope of an aiohttp request."""
    transport = request.transport
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method, "scheme": request.scheme, "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"), "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": _addr(transport.get_extra_info("peername")) if transport else None,
        "server": _addr(transport.get_extra_info("sockname")) if transport else None,
        **(extra or {}),
    }


async def serve(app: ASGIApp, request: web.Request,
                extra: dict[str, Any] | None = None) -> web.StreamResponse:
    """Run `app` for `request`: its body in, its answer out (an event stream is streamed)."""
    body = await request.read()
    done = asyncio.Event()
    sent_body = False
    status = 500
    headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []
    stream: web.StreamResponse | None = None

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the transport only learns of a disconnect after its answer
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, stream
        if message["type"] == "http.response.start":
            status = message["status"]
            headers.extend((k.decode("latin-1"), v.decode("latin-1"))
                           for k, v in message.get("headers", ())
                           if k.lower() not in HOP_HEADERS)
            if any(k.lower() == "content-type" and v.startswith("text/event-stream")
                   for k, v in headers):
                stream = web.StreamResponse(status=status)
                for k, v in headers:
                    stream.headers.add(k, v)
                await stream.prepare(request)
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            if stream is not None:
                if chunk:
                    await stream.write(chunk)
            elif chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                done.set()

    try:
        await app(scope_of(request, extra), receive, send)
    finally:
        done.set()
    if stream is not None:
        await stream.write_eof()
        return stream
    out = web.Response(status=status, body=b"".join(chunks))
    for k, v in headers:
        if k.lower() != "content-type":
            out.headers.add(k, v)
        else:
            out.headers["Content-Type"] = v
    return out
