"""A real gateway behind a proxy that can spoil its answers (garbage, oversize, bad items, 401).

The proxy passes every request through unchanged unless a rule matches the path; it records
each request's method, path and headers so tests can see what a primary sent to its peer.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web

HOP = {"host", "content-length", "transfer-encoding", "connection"}


@dataclass
class Seen:
    """One request the proxy received."""

    method: str
    path: str
    headers: dict[str, str]
    status: int = 0


class JunkProxy:
    """Proxy in front of one gateway; `rules` maps a path regex to a behaviour."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = f"http://127.0.0.1:{upstream_port}"
        self.rules: dict[str, str] = {}
        self.seen: list[Seen] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._session: aiohttp.ClientSession | None = None

    def behaviour(self, path: str) -> str | None:
        """The behaviour of the first rule matching a path, if any."""
        for pattern, what in list(self.rules.items()):
            if re.search(pattern, path):
                return what
        return None

    def requests(self, pattern: str) -> list[Seen]:
        """Requests whose path matches a regex."""
        return [s for s in list(self.seen) if re.search(pattern, s.path)]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        seen = Seen(request.method, request.raw_path, dict(request.headers))
        self.seen.append(seen)
        what = self.behaviour(request.raw_path)
        if what == "401":
            seen.status = 401
            return web.json_response({"error_code": "unauthorized", "message": "token"},
                                     status=401)
        if what == "garbage":
            seen.status = 200
            return web.Response(body=b"\x00{not json at all", content_type="application/json")
        if what == "oversize":
            seen.status = 200
            filler = [{"id": f"/t{i}", "name": "x" * 200} for i in range(4000)]
            return web.Response(body=orjson.dumps({"items": filler}),
                                content_type="application/json")
        if what == "hang":
            await asyncio.sleep(3600)
        if what == "trickle":  # headers at once, then a byte of whitespace every 0.2 s
            seen.status = 200
            out = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            await out.prepare(request)
            for _ in range(3000):
                await out.write(b" ")
                await asyncio.sleep(0.2)
            return out
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        assert self._session is not None
        async with self._session.request(request.method, self.upstream + request.raw_path,
                                         headers=headers, data=body or None,
                                         allow_redirects=False) as up:
            data = await up.read()
            seen.status = up.status
            out_headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP}
            if what == "bad-items" and up.status == 200:
                doc = orjson.loads(data)
                doc["items"].append({"id": 42, "name": "not a topic"})
                doc["items"].append({
                    "id": "/junk/topic", "name": "topic", "category": "currentData",
                    "smuggled": "peer-only field",
                    "x-vendor": {"ros2": {"direction": "publish", "topic": "/junk/topic",
                                          "type": "std_msgs/msg/String", "qos": "?"},
                                 "member_ids": [], "extra": True}})
                data = orjson.dumps(doc)
                out_headers.pop("Content-Length", None)
            return web.Response(status=up.status, body=data, headers=out_headers)

    def start(self) -> JunkProxy:
        """Serve on a free loopback port from a background thread."""
        self._thread = threading.Thread(target=self._run, daemon=True, name="junk-proxy")
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("junk proxy did not start")
        return self

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._session = aiohttp.ClientSession(auto_decompress=False)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        await self._stop.wait()
        await self._session.close()
        await runner.cleanup()

    def stop(self) -> None:
        """Stop serving."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> JunkProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
