"""The SSE broadcaster on a real aiohttp server: frames, replay, cap, slot release, keep-alive."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.errors import ApiError
from gateway.faults.stream import FaultStream, SseSlots, frame
from gateway.http.middleware import error_response


def app_for(stream: FaultStream) -> web.Application:
    @web.middleware
    async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as err:
            return error_response(err, "vendor")

    app = web.Application(middlewares=[errors])
    app.router.add_get("/stream", stream.serve)
    return app


async def read_events(resp: aiohttp.ClientResponse, count: int) -> list[tuple[int, str, str]]:
    """Read count events (id, event, data), skipping comments."""
    out: list[tuple[int, str, str]] = []
    fields: dict[str, str] = {}
    while len(out) < count:
        line = (await asyncio.wait_for(resp.content.readline(), 5)).decode().rstrip("\n")
        if line == "":
            if fields:
                out.append((int(fields["id"]), fields["event"], fields["data"]))
                fields = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            fields[key] = value
    return out


async def wait_until(predicate: Any) -> None:
    for _ in range(200):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def test_frame_format() -> None:
    assert frame(7, "fault_confirmed", {"a": 1}) == (
        b'id: 7\nevent: fault_confirmed\ndata: {"a":1}\n\n')


def test_delivery_replay_cap_and_release() -> None:
    async def scenario() -> None:
        slots = SseSlots(2)
        stream = FaultStream(slots, keepalive_s=30.0, first_id=10)
        async with TestServer(app_for(stream), handler_cancellation=True) as server, \
                aiohttp.ClientSession() as session:
            url = server.make_url("/stream")
            for i in range(3):
                stream.publish("fault_confirmed", {"n": i})  # ids 11, 12, 13
            first = await session.get(url)
            assert first.status == 200
            assert first.headers["Content-Type"] == "text/event-stream"
            assert first.headers["Cache-Control"] == "no-cache"
            await wait_until(lambda: slots.connected == 1 and stream.clients)
            stream.publish("fault_updated", {"n": 3})
            assert await read_events(first, 1) == [(14, "fault_updated", '{"n":3}')]
            # a reconnect with Last-Event-ID gets what it missed, then live events
            second = await session.get(url, headers={"Last-Event-ID": "12"})
            got = await read_events(second, 2)
            assert [(i, e) for i, e, _ in got] == [(13, "fault_confirmed"), (14, "fault_updated")]
            # the cap answers 503 with the error body
            third = await session.get(url)
            assert third.status == 503
            assert (await third.json())["error_code"] == "service-unavailable"
            # a disconnect frees the slot at once
            second.close()
            await wait_until(lambda: slots.connected == 1)
            fourth = await session.get(url)
            assert fourth.status == 200
            stream.publish("fault_cleared", {"n": 4})
            assert (await read_events(fourth, 1))[0][:2] == (15, "fault_cleared")
            assert (await read_events(first, 1))[0][:2] == (15, "fault_cleared")
            first.close()
            fourth.close()
            await wait_until(lambda: slots.connected == 0)

    asyncio.run(scenario())


def test_replay_keeps_the_last_hundred() -> None:
    stream = FaultStream(SseSlots(1), keepalive_s=30.0)
    for i in range(150):
        stream.publish("fault_updated", {"n": i})
    replayed = stream.replay(0)  # 1..50 are gone: a refetch event, then the hundred kept
    assert len(replayed) == 101 and b"event: refetch" in replayed[0]
    assert stream.replay(145)[0].startswith(b"id: 146\n")
    assert stream.replay(None) == [] and stream.replay(150) == []


def test_keepalive_comment() -> None:
    async def scenario() -> None:
        stream = FaultStream(SseSlots(1), keepalive_s=0.1)
        async with TestServer(app_for(stream), handler_cancellation=True) as server, \
                aiohttp.ClientSession() as session:
            resp = await session.get(server.make_url("/stream"))
            lines = [(await asyncio.wait_for(resp.content.readline(), 5)) for _ in range(4)]
            assert b":keepalive\n" in lines
            resp.close()

    asyncio.run(scenario())


def test_slow_client_is_dropped_not_blocking() -> None:
    stream = FaultStream(SseSlots(1), keepalive_s=30.0)

    async def scenario() -> None:
        from gateway.faults import stream as mod

        client = mod._Client(asyncio.Queue(2))
        stream.clients.add(client)
        for i in range(5):
            stream.publish("fault_updated", {"n": i})
        assert client.overflowed and stream.dropped_clients == 1
        assert client.queue.get_nowait() == b""  # the close marker

    asyncio.run(scenario())


def test_backlog_counts_queued_frames_and_clients_not_yet_reached(monkeypatch: Any) -> None:
    from gateway.faults import stream as mod

    monkeypatch.setattr(mod, "FANOUT_SLICE", 2)  # 5 clients: an event reaches 2 per step

    async def scenario() -> None:
        stream = FaultStream(SseSlots(8), keepalive_s=30.0)
        clients = [mod._Client(asyncio.Queue(10)) for _ in range(5)]  # no transport: queued
        stream.clients.update(clients)
        assert stream.backlog() == 0
        stream.publish("fault_confirmed", {"n": 1})
        # more clients than one step serves: the event waits in the outbox for all five
        assert all(c.queue.empty() for c in clients)
        assert stream.backlog() == 5
        await wait_until(lambda: all(c.queue.qsize() == 1 for c in clients))
        assert stream.backlog() == 5  # reached everyone; one frame in each queue
        for c in clients[:3]:
            c.queue.get_nowait()
        assert stream.backlog() == 2
        stream.clients.difference_update(clients[3:])  # disconnected: nothing to deliver
        assert stream.backlog() == 0

    asyncio.run(scenario())


class _Relay:
    """A peer relay as the federation installs it: /local asks for this gateway's own events."""

    def __init__(self) -> None:
        self.open = 0  # clients the relays are open for

    def wanted_by(self, request: web.Request, /) -> bool:
        return request.path != "/local"

    @contextlib.contextmanager
    def attached(self, publish: Callable[[str, Any], int], /) -> Iterator[None]:
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1


def test_local_only_clients_get_no_relayed_events() -> None:
    async def scenario() -> None:
        slots = SseSlots(2)
        stream = FaultStream(slots, keepalive_s=30.0)
        stream.relay = relay = _Relay()
        app = app_for(stream)
        app.router.add_get("/local", stream.serve)
        stream.publish("fault_confirmed", {"own": 1})  # id 1
        stream.publish_relayed("fault_confirmed", {"peer": 2})  # id 2
        async with TestServer(app, handler_cancellation=True) as server, \
                aiohttp.ClientSession() as session:
            fleet = await session.get(server.make_url("/stream"),
                                      headers={"Last-Event-ID": "0"})
            local = await session.get(server.make_url("/local"), headers={"Last-Event-ID": "0"})
            await wait_until(lambda: slots.connected == 2 and len(stream.clients) == 2)
            assert relay.open == 1  # for the fleet client only
            stream.publish_relayed("fault_updated", {"peer": 3})  # id 3
            stream.publish("fault_cleared", {"own": 4})  # id 4
            assert [i for i, _, _ in await read_events(fleet, 4)] == [1, 2, 3, 4]
            assert [i for i, _, _ in await read_events(local, 2)] == [1, 4]
            fleet.close()
            local.close()
            await wait_until(lambda: slots.connected == 0)
            assert relay.open == 0

    asyncio.run(scenario())


def test_a_batch_of_events_reaches_clients_in_order_and_replays() -> None:
    async def scenario() -> None:
        stream = FaultStream(SseSlots(4), 30.0, first_id=10)
        async with TestServer(app_for(stream)) as server, aiohttp.ClientSession() as session:
            async with session.get(server.make_url("/stream")) as resp:
                await wait_until(lambda: len(stream.clients) == 1)
                stream.publish_many([("fault_confirmed", {"n": 1}),
                                     ("fault_updated", {"n": 2}),
                                     ("fault_cleared", {"n": 3})])
                events = await read_events(resp, 3)
                assert [(i, e) for i, e, _ in events] == [
                    (11, "fault_confirmed"), (12, "fault_updated"), (13, "fault_cleared")]
            assert [i for i, _, _ in stream.ring] == [11, 12, 13]
            assert len(stream.replay(11)) == 2 and stream.published == 3

    asyncio.run(scenario())


def test_fan_out_to_many_clients_in_slices_keeps_order(monkeypatch: Any) -> None:
    from gateway.faults import stream as stream_module

    monkeypatch.setattr(stream_module, "FANOUT_SLICE", 2)  # 5 clients: three loop steps

    async def scenario() -> None:
        stream = FaultStream(SseSlots(8), 30.0)
        async with TestServer(app_for(stream)) as server, aiohttp.ClientSession() as session:
            resps = [await session.get(server.make_url("/stream")) for _ in range(5)]
            await wait_until(lambda: len(stream.clients) == 5)
            stream.publish("fault_confirmed", {"n": 1})
            stream.publish_many([("fault_updated", {"n": 2}), ("fault_cleared", {"n": 3})])
            stream.publish("fault_confirmed", {"n": 4})
            for resp in resps:
                events = await read_events(resp, 4)
                assert [i for i, _, _ in events] == [1, 2, 3, 4]
                resp.close()

    asyncio.run(scenario())


def test_a_client_whose_last_event_left_the_ring_is_told_to_refetch() -> None:
    stream = FaultStream(SseSlots(1), 30.0)
    for k in range(150):
        stream.publish("fault_confirmed", {"n": k})
    frames = stream.replay(10)  # events 11..50 are gone
    assert frames[0].startswith(b"id: 50\nevent: refetch\n")
    assert b'"reason":"events_not_kept"' in frames[0] and b'"refetch":"/api/v1/faults"' in frames[0]
    assert frames[1].startswith(b"id: 51\n") and len(frames) == 101
    assert not any(b"refetch" in f for f in stream.replay(50))  # nothing missed
    assert stream.replay(150) == []
    assert b'"reason":"unknown_event_id"' in stream.replay(999)[0]


def test_event_ids_survive_a_restart_without_reuse() -> None:
    stored: list[int] = []
    first = FaultStream(SseSlots(1), 30.0, persist=stored.append)
    for k in range(5):
        first.publish_relayed("fault_confirmed", {"n": k})  # relayed: persisted by reservation
    assert stored and stored[-1] >= first.last_id == 5
    stored.append(first.reserve(3))  # what a local commit stores with its faults
    # a crash: the new process starts above every id the old one could have used
    second = FaultStream(SseSlots(1), 30.0, first_id=stored[-1], persist=stored.append)
    assert second.publish("fault_confirmed", {}) > 5 + 3
    frames = second.replay(5)  # the client saw id 5 before the crash: told to refetch
    assert b"event: refetch" in frames[0]


class _Transport:
    """A socket transport's write side (what the fan-out looks at)."""

    def __init__(self, buffered: int = 0, closing: bool = False) -> None:
        self.buffered, self.closing = buffered, closing
        self.written: list[bytes] = []

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:
        self.written.append(data)


def test_caught_up_clients_get_the_chunk_written_directly_others_queue_it() -> None:
    from gateway.faults import stream as mod
    from gateway.faults.stream import chunk

    async def scenario() -> None:
        stream = FaultStream(SseSlots(8), 30.0)
        ready, behind, full, closing = (mod._Client(transport=_Transport()),
                                        mod._Client(transport=_Transport()),
                                        mod._Client(transport=_Transport(buffered=10)),
                                        mod._Client(transport=_Transport(closing=True)))
        behind.queue.put_nowait(b"earlier")
        stream.clients.update((ready, behind, full, closing))
        stream.publish("fault_confirmed", {"n": 1})
        raw = frame(1, "fault_confirmed", {"n": 1})
        assert ready.transport.written == [chunk(raw)] and ready.queue.empty()
        assert chunk(raw) == b"%x\r\n" % len(raw) + raw + b"\r\n"
        # nothing may overtake what a client already has queued or buffered
        assert behind.transport.written == [] and list(behind.queue._queue) == [b"earlier", raw]
        assert full.transport.written == [] and full.queue.get_nowait() == raw
        assert closing.transport.written == [] and closing.queue.get_nowait() == raw

    asyncio.run(scenario())


def test_a_client_behind_on_its_socket_is_still_dropped_at_its_queue_bound() -> None:
    from gateway.faults import stream as mod

    async def scenario() -> None:
        stream = FaultStream(SseSlots(1), 30.0)
        stuck = mod._Client(asyncio.Queue(2), transport=_Transport(buffered=1 << 20))
        stream.clients.add(stuck)
        for i in range(5):
            stream.publish("fault_updated", {"n": i})
        assert stuck.overflowed and stream.dropped_clients == 1
        assert stuck.queue.get_nowait() == b"" and stuck.transport.written == []

    asyncio.run(scenario())


def test_a_fan_out_step_stops_at_its_time_budget_and_resumes_in_order() -> None:
    from gateway.faults import stream as mod

    async def scenario() -> None:
        stream = FaultStream(SseSlots(64), 30.0)
        clients = [mod._Client(transport=_Transport()) for _ in range(20)]
        # past the budget already: each step still serves 8 clients, then yields
        served = stream._deliver(b"x", mod.chunk(b"x"), clients, 0, until=0.0)
        assert served == 8
        stream.clients.update(clients)
        stream.publish("fault_confirmed", {"n": 1})
        stream.publish("fault_cleared", {"n": 2})
        for _ in range(10):
            await asyncio.sleep(0)
        for c in clients:
            ids = [w.split(b"\n", 2)[1] for w in c.transport.written]
            assert ids[-2:] == [b"id: 1", b"id: 2"]

    asyncio.run(scenario())


def test_direct_writes_over_tls(tmp_path: Any) -> None:
    import ssl

    from tests.integration.test_security_helpers import client_context, make_pki

    pki = make_pki(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(str(pki.server_cert), str(pki.server_key))

    async def scenario() -> None:
        stream = FaultStream(SseSlots(2), 30.0)
        runner = web.AppRunner(app_for(stream), handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ctx)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with aiohttp.ClientSession() as session, session.get(
                    f"https://127.0.0.1:{port}/stream", ssl=client_context(pki)) as resp:
                await wait_until(lambda: any(c.transport for c in stream.clients))
                stream.publish("fault_confirmed", {"n": 1})
                stream.publish_many([("fault_updated", {"n": 2}), ("fault_cleared", {"n": 3})])
                assert [i for i, _, _ in await read_events(resp, 3)] == [1, 2, 3]
        finally:
            await runner.cleanup()

    asyncio.run(scenario())


def test_events_published_before_a_slice_goes_out_reach_each_client_in_one_write(
        monkeypatch: Any) -> None:
    from gateway.faults import stream as mod

    monkeypatch.setattr(mod, "FANOUT_SLICE", 2)  # 5 clients: an event goes out in 3 steps

    async def scenario() -> None:
        stream = FaultStream(SseSlots(8), 30.0)
        clients = [mod._Client(transport=_Transport()) for _ in range(4)]
        queued = mod._Client(asyncio.Queue(10))  # no transport: its frames are queued
        stream.clients.update([*clients, queued])
        stream.publish("fault_confirmed", {"n": 1})
        stream.publish_many([("fault_updated", {"n": 2}), ("fault_updated", {"n": 3})])
        assert len(stream._outbox) == 1  # joined: none of it has gone out yet
        assert stream.backlog() == 3 * 5  # three events owed to five clients
        await asyncio.sleep(0)  # the first slice goes out: no more frames join it
        stream.publish("fault_cleared", {"n": 4})
        assert len(stream._outbox) == 2
        for _ in range(20):
            await asyncio.sleep(0)
        assert not stream._outbox and stream.backlog() == 2  # the queued client's two chunks
        for c in clients:
            assert len(c.transport.written) == 2
            ids = [line for w in c.transport.written for line in w.split(b"\n")
                   if line.startswith(b"id: ")]
            assert ids == [b"id: 1", b"id: 2", b"id: 3", b"id: 4"]
        assert queued.queue.get_nowait() == b"".join(
            frame(i, e, {"n": i}) for i, e in ((1, "fault_confirmed"), (2, "fault_updated"),
                                               (3, "fault_updated")))
        assert queued.queue.get_nowait() == frame(4, "fault_cleared", {"n": 4})

    asyncio.run(scenario())
