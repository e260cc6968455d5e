"""Per-stream flow control in robot tunnels (gateway/federation/tunnel.py): a client that stops
reading one download holds back only that stream; an end without credits still works.

Two real Mux ends over a real WebSocket in process: the primary's end accepts local TCP
connections, the robot's end connects each stream to a local server standing in for the
robot's gateway (`/big` answers 32 MiB, `/ping` answers `pong`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web

from gateway.federation import tunnel
from gateway.federation.tunnel import CREDIT, Mux

BIG = 32 * 1024 * 1024  # past any socket buffers: an unread download fills them
BUDGET_S = 60.0


async def _robot_gateway(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        if head.startswith(b"GET /big"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % BIG)
            chunk = b"x" * (1 << 20)
            for _ in range(BIG // len(chunk)):
                writer.write(chunk)
                await writer.drain()
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong")
            await writer.drain()
    except (OSError, ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


class _OldMux(Mux):
    """An end of an earlier version: sends no CREDIT frames and ignores those it gets."""

    async def send(self, stream: int, kind: int, payload: bytes = b"") -> None:
        if kind != CREDIT:
            await super().send(stream, kind, payload)

    def _credit(self, stream: int, payload: bytes) -> None:
        return None


@contextlib.asynccontextmanager
async def _tunnel(primary_cls: type[Mux] = Mux, robot_cls: type[Mux] = Mux
                  ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
    """(the primary's local port, the two ends) of a tunnel to a stand-in robot gateway."""
    gateway = await asyncio.start_server(_robot_gateway, "127.0.0.1", 0)
    gw_port = gateway.sockets[0].getsockname()[1]
    ends: dict[str, Any] = {}
    ready = asyncio.Event()

    async def ws_handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        ends["primary"] = primary_cls(ws)
        ready.set()
        await ends["primary"].run()
        return ws

    app = web.Application()
    app.router.add_get("/tunnel", ws_handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    ws_port = runner.addresses[0][1]
    session = aiohttp.ClientSession()
    ws = await session.ws_connect(f"http://127.0.0.1:{ws_port}/tunnel", max_msg_size=0)

    async def opener() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", gw_port)

    ends["robot"] = robot_cls(ws, opener)
    robot_task = asyncio.ensure_future(ends["robot"].run())
    await asyncio.wait_for(ready.wait(), BUDGET_S)
    local = await asyncio.start_server(ends["primary"].accept, "127.0.0.1", 0)
    try:
        yield local.sockets[0].getsockname()[1], ends
    finally:
        local.close()
        await ws.close()
        robot_task.cancel()
        await session.close()
        await runner.cleanup()
        gateway.close()


async def _get(port: int, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: robot\r\n\r\n".encode())
    await writer.drain()
    return reader, writer


async def _ping(port: int) -> bytes:
    reader, writer = await _get(port, "/ping")
    try:
        return await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()


def test_a_stalled_download_holds_back_only_its_own_stream() -> None:
    async def run() -> None:
        async with _tunnel() as (port, ends):
            reader, writer = await _get(port, "/big")
            await reader.readexactly(1)  # the download started; this client reads no more
            robot = ends["robot"]

            async def stalled() -> None:  # the socket buffers filled: the window ran out
                while not any(n <= 0 for n in robot.window.values()):
                    await asyncio.sleep(0.05)

            await asyncio.wait_for(stalled(), BUDGET_S)
            for _ in range(3):  # the other streams of the tunnel still answer
                answer = await asyncio.wait_for(_ping(port), BUDGET_S)
                assert answer.endswith(b"pong")
            assert ends["primary"].peer_credits and robot.peer_credits
            writer.close()
            await writer.wait_closed()

    asyncio.run(asyncio.wait_for(run(), BUDGET_S * 2))


def test_a_download_read_to_its_end_arrives_whole() -> None:
    async def run() -> None:
        for primary_cls, robot_cls in ((Mux, Mux), (Mux, _OldMux), (_OldMux, Mux)):
            async with _tunnel(primary_cls, robot_cls) as (port, ends):
                reader, writer = await _get(port, "/big")
                head = await reader.readuntil(b"\r\n\r\n")
                assert b"Content-Length: %d" % BIG in head
                body = await reader.readexactly(BIG)
                assert body == b"x" * BIG
                writer.close()
                await writer.wait_closed()
                both_new = primary_cls is Mux and robot_cls is Mux
                assert ends["primary"].peer_credits is both_new
                assert ends["robot"].peer_credits is both_new

    asyncio.run(asyncio.wait_for(run(), BUDGET_S * 3))


def test_credit_counts_only_for_open_streams() -> None:
    mux = Mux.__new__(Mux)
    mux.peer_credits, mux.window, mux.credited = False, {}, {}
    mux._credit(7, b"")
    assert mux.peer_credits and mux.window == {}
    mux.window[7] = 0
    mux._credit(7, tunnel._COUNT.pack(4096))
    mux._credit(7, b"\x00")  # malformed: ignored
    assert mux.window == {7: 4096}


def test_small_answers_are_confirmed_in_steps_not_one_frame_each() -> None:
    # A read's answer of a few KiB costs no CREDIT frame; what waits is confirmed once it
    # reaches CONFIRM_AT, and a closed stream's count is dropped.
    sent: list[tuple[int, int, bytes]] = []

    class _Writer:
        def write(self, data: bytes) -> None:
            pass

        async def drain(self) -> None:
            pass

    async def run() -> None:
        mux = Mux.__new__(Mux)
        mux.peer_credits, mux.unconfirmed, mux.draining, mux.tasks = True, {}, set(), set()
        writer = _Writer()
        mux.writers = {3: writer}  # type: ignore[dict-item]

        async def send(stream: int, kind: int, payload: bytes = b"") -> None:
            sent.append((stream, kind, payload))

        mux.send = send  # type: ignore[method-assign]
        for _ in range(10):
            mux._received(3, writer, b"x" * 2000)  # type: ignore[arg-type]
        await asyncio.sleep(0)
        assert sent == [] and mux.unconfirmed == {3: 20000}
        mux._received(3, writer, b"x" * tunnel.CONFIRM_AT)  # type: ignore[arg-type]
        for _ in range(5):
            await asyncio.sleep(0)
        assert sent == [(3, CREDIT, tunnel._COUNT.pack(20000 + tunnel.CONFIRM_AT))]
        assert not mux.unconfirmed.get(3)

    asyncio.run(run())
