"""A gap-free fault relay (issue 42): id bookkeeping and parsing (pure), then FaultRelay
against a peer that is a real FaultStream on a real aiohttp server (restarted, rejoined,
relayed for the read cache alone); the peer table and peers are stand-ins."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.faults.stream import FaultStream, SseSlots, position_header
from gateway.federation import relay as relay_module
from gateway.federation.relay import (
    FORGET_S,
    MAX_GONE,
    PEER_CANNOT_RESUME,
    PEER_JOINED,
    PEER_REFETCH,
    FaultRelay,
    ResumePoints,
    parse_events,
    parse_id,
    position_of,
    refetch_data,
)
from gateway.http.state import STATE

XV = "x-vendor"


# -- pure parts ------------------------------------------------------------------------------

def test_ids_are_bounded_decimal_digits() -> None:
    assert parse_id("42") == 42 and parse_id(" 7 ") == 7 and parse_id("0") == 0
    for bad in (None, "", "-1", "1e3", "0x10", "٣", "12a", "9" * 20, "1 2"):
        assert parse_id(bad) is None, bad
    assert parse_id("9" * 19) == int("9" * 19)


def test_frames_carry_their_ids_and_malformed_ids_are_dropped() -> None:
    buf = bytearray(b":connected\n\nid: 4\nevent: fault_confirmed\ndata: {}\n\n"
                    b"id: x\nevent: refetch\ndata: {\"a\":1}\n\nid: 9\n\ndata: 1\n\nid: 5")
    assert list(parse_events(buf)) == [(4, "fault_confirmed", "{}"), (None, "refetch", '{"a":1}'),
                                       (None, "message", "1")]
    assert bytes(buf) == b"id: 5"  # an id-only block dispatches nothing


def test_position_header_round_trip() -> None:
    assert position_header(XV) == "X-Vendor-Last-Event-Id"
    assert position_of({"X-Vendor-Last-Event-Id": "12"}, XV) == 12
    assert position_of({"X-Vendor-Last-Event-Id": "-3"}, XV) is None
    assert position_of({}, XV) is None


def test_first_open_then_resume_by_name() -> None:
    points = ResumePoints()
    assert points.headers("r1") == {}
    assert points.opened("r1", 10, initial=True) is None  # the first client: nothing to resume
    assert points.headers("r1") == {"Last-Event-ID": "10"}
    points.seen("r1", 11)
    points.seen("r1", None)  # a frame without an id moves nothing
    assert points.headers("r1") == {"Last-Event-ID": "11"}
    assert points.opened("r1", 30, initial=False) is None  # resumes: the peer replays 12..30
    assert points.headers("r1") == {"Last-Event-ID": "11"}  # only seen events move the mark
    points.seen("unknown", 5)
    assert "unknown" not in points.marks


def test_when_a_refetch_is_owed() -> None:
    points = ResumePoints()
    assert points.opened("late", 3, initial=False) == PEER_JOINED  # joined while clients here
    assert points.opened("quiet", None, initial=True) is None  # a peer without a position
    assert points.opened("quiet", 7, initial=False) == PEER_CANNOT_RESUME  # nothing to resume
    assert points.headers("quiet") == {"Last-Event-ID": "7"}  # but it does next time
    assert points.opened("quiet", 7, initial=False) is None
    assert points.opened("quiet", None, initial=False) == PEER_CANNOT_RESUME  # says nothing


def test_marks_outlive_a_removal_for_a_while_then_are_forgotten() -> None:
    points = ResumePoints()
    points.opened("r1", 5, initial=True)
    points.opened("r2", 6, initial=True)
    points.sweep({"r2"}, now=100.0)  # r1's tunnel dropped
    points.sweep({"r2"}, now=100.0 + FORGET_S / 2)
    assert points.headers("r1") == {"Last-Event-ID": "5"}
    points.sweep({"r1", "r2"}, now=100.0 + FORGET_S)  # back in time: kept
    points.sweep({"r2"}, now=200.0 + FORGET_S)
    points.sweep({"r2"}, now=201.0 + 2 * FORGET_S)
    assert set(points.marks) == {"r2"}


def test_gone_marks_are_capped() -> None:
    points = ResumePoints()
    for i in range(MAX_GONE + 10):
        points.opened(f"r{i}", i, initial=True)
        points.sweep({f"r{i}"}, now=float(i))  # each in turn, the others gone since
    points.sweep(set(), now=float(MAX_GONE + 10))
    assert len(points.marks) == MAX_GONE
    assert "r0" not in points.marks and f"r{MAX_GONE + 9}" in points.marks


def test_a_peers_refetch_is_reworded_in_this_streams_terms() -> None:
    peer = {"event_type": "refetch", "reason": "gateway_restarted", "last_event_id": 5,
            "oldest_kept_id": 2001, "refetch": "/api/v1/faults", "x": "y" * 1000}
    out = refetch_data(PEER_REFETCH, XV, peer)
    assert out["reason"] == PEER_REFETCH and out["refetch"] == "/api/v1/faults"
    assert "last_event_id" not in out and "x" not in out  # the peer's numbering stays below
    assert out[XV] == {"peer_last_event_id": 5, "peer_oldest_kept_id": 2001,
                       "peer_reason": "gateway_restarted"}
    site = refetch_data(PEER_REFETCH, XV, {"reason": PEER_JOINED, XV: {"peer": "r1"},
                                           "last_event_id": True})
    assert site[XV] == {"peer": "r1", "peer_reason": PEER_JOINED}
    relayed = relay_module.tag(site, "site1", XV, lambda g, a: a)
    assert relayed[XV]["peer"] == "site1" and relayed[XV]["peer_path"] == ["site1", "r1"]


# -- FaultRelay against a real peer stream ----------------------------------------------------

class Peer:
    """What the relay uses of a federation Peer."""

    def __init__(self, name: str, url: str, session: aiohttp.ClientSession) -> None:
        self.name, self.online = name, True
        self.client = SimpleNamespace(session=session, budgets=SimpleNamespace(timeout_s=5.0),
                                      api=lambda path: f"{url}/api/v1{path}")


class Robot:
    """A peer gateway's fault stream, restartable (a new FaultStream above the stored ids)."""

    def __init__(self) -> None:
        self.stored: list[int] = []
        self.stream = FaultStream(SseSlots(8), 30.0, persist=self.stored.append)
        self.asked: list[str | None] = []  # Last-Event-ID of each open

    async def serve(self, request: web.Request) -> web.StreamResponse:
        self.asked.append(request.headers.get("Last-Event-ID"))
        return await self.stream.serve(request)

    def restart(self) -> None:
        self.stream.end_all()
        self.stream = FaultStream(SseSlots(8), 30.0, first_id=self.stored[-1],
                                  persist=self.stored.append)

    def fault(self, code: str) -> int:
        return self.stream.publish("fault_confirmed", {"fault": {"fault_code": code}})


class Listener:
    """A local stream: what the relay publishes to it."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def publish(self, event: str, data: dict[str, Any]) -> None:
        self.events.append((event, data))

    def codes(self) -> list[str]:
        return [d["fault"]["fault_code"] for e, d in self.events if e != "refetch"]

    def refetches(self) -> list[dict[str, Any]]:
        return [d for e, d in self.events if e == "refetch"]


async def until(predicate: Any, what: str, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


@asynccontextmanager
async def fleet(*names: str) -> AsyncIterator[tuple[FaultRelay, dict[str, Robot], Any, Any]]:
    robots = {n: Robot() for n in names}
    app = web.Application()
    app[STATE] = SimpleNamespace(xv=XV)  # type: ignore[misc]  # what serve() reads of it

    async def serve(request: web.Request) -> web.StreamResponse:
        return await robots[request.match_info["robot"]].serve(request)

    async def hang(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)  # answers, then never sends a byte (a dead tunnel's port)
        await asyncio.Event().wait()
        return resp

    app.router.add_get("/hang/api/v1/faults/stream", hang)
    app.router.add_get("/{robot}/api/v1/faults/stream", serve)
    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        table = SimpleNamespace(peers={})

        def add(name: str, at: str = "") -> Peer:
            url = str(server.make_url(f"/{at or name}"))
            peer = table.peers[name] = Peer(name, url, session)
            return peer

        for name in names:
            add(name)
        relay = FaultRelay(table, lambda peer: {}, XV, lambda g, a: a)  # type: ignore[arg-type]
        try:
            yield relay, robots, table, add
        finally:
            await relay.close()


def test_a_relay_resumes_a_peer_where_the_stream_left_it() -> None:
    async def scenario() -> None:
        async with fleet("r1") as (relay, robots, _table, _add):
            r1, here = robots["r1"], Listener()
            with relay.attached(here.publish):
                await until(lambda: r1.stream.clients, "the relay open")
                r1.fault("A")
                await until(lambda: here.codes() == ["A"], "A relayed")
            assert r1.asked == [None]  # the first open: nothing to resume
            assert here.events[0][1][XV] == {"peer": "r1"}
            r1.fault("B")  # no client attached here: no relay
            r1.fault("C")
            with relay.attached(here.publish):
                await until(lambda: here.codes() == ["A", "B", "C"], "B and C replayed")
                r1.fault("D")
                await until(lambda: here.codes()[-1:] == ["D"], "D live")
            assert r1.asked[-1] == str(r1.stream.last_id - 3)
            assert here.refetches() == []

    asyncio.run(scenario())


def test_a_restarted_peer_says_refetch_and_replays_what_it_kept() -> None:
    async def scenario() -> None:
        async with fleet("r1") as (relay, robots, _table, _add):
            r1, here = robots["r1"], Listener()
            with relay.attached(here.publish):
                await until(lambda: r1.stream.clients, "the relay open")
                r1.fault("A")
                await until(lambda: here.codes() == ["A"], "A relayed")
                r1.restart()  # its clients' streams end; the new process numbers above
                r1.fault("B")  # confirmed as it comes back, before the relay reconnects
                await until(lambda: "B" in here.codes(), "B replayed after the restart")
                (refetch,) = here.refetches()
                assert refetch["reason"] == PEER_REFETCH and refetch[XV]["peer"] == "r1"
                assert refetch[XV]["peer_reason"] == "gateway_restarted"
                kinds = [e if e == "refetch" else d["fault"]["fault_code"] for e, d in here.events]
                assert kinds == ["A", "refetch", "B"]  # told first, then what the peer kept
                assert relay.refetches == 1

    asyncio.run(scenario())


def test_a_peer_joining_while_clients_are_attached_gets_a_refetch() -> None:
    async def scenario() -> None:
        async with fleet() as (relay, _robots, table, add):
            here = Listener()
            with relay.attached(here.publish):
                await until(lambda: not relay._fresh, "the first pass (no peer yet)")
                _robots["late"] = Robot()
                add("late")
                await until(lambda: here.refetches(), "a refetch for the new peer")
                assert here.refetches()[0]["reason"] == PEER_JOINED
                assert here.refetches()[0][XV]["peer"] == "late"
                assert table.peers["late"]

    asyncio.run(scenario())


def test_a_dial_in_peer_recreated_under_its_name_resumes() -> None:
    async def scenario() -> None:
        async with fleet("r1") as (relay, robots, table, add):
            r1, here = robots["r1"], Listener()
            with relay.attached(here.publish):
                await until(lambda: r1.stream.clients, "the relay open")
                r1.fault("A")
                await until(lambda: here.codes() == ["A"], "A relayed")
                del table.peers["r1"]  # its tunnel dropped: removed from the table
                await until(lambda: not relay._relays, "the relay stopped")
                r1.stream.end_all()
                r1.fault("B")
                add("r1")  # back, as a new Peer object
                await until(lambda: here.codes() == ["A", "B"], "B replayed")
                assert r1.asked[-1] == str(r1.stream.last_id - 1)
                assert here.refetches() == []

    asyncio.run(scenario())


def test_events_seen_only_by_the_cache_listener_are_replayed_to_the_stream() -> None:
    async def scenario() -> None:
        async with fleet("r1") as (relay, robots, _table, _add):
            r1, here, cache = robots["r1"], Listener(), Listener()
            with relay.attached(cache.publish, stream=False):
                with relay.attached(here.publish):
                    await until(lambda: r1.stream.clients, "the relay open")
                    r1.fault("A")
                    await until(lambda: here.codes() == ["A"], "A relayed")
                r1.fault("B")  # the relay stays open for the cache; no stream client
                await until(lambda: cache.codes() == ["A", "B"], "B to the cache")
                with relay.attached(here.publish):
                    await until(lambda: here.codes() == ["A", "B"], "B replayed to the stream")
                assert here.refetches() == []

    asyncio.run(scenario())


def test_two_clients_of_one_stream_get_each_event_once() -> None:
    async def scenario() -> None:
        async with fleet("r1") as (relay, robots, _table, _add):
            r1, here = robots["r1"], Listener()
            with relay.attached(here.publish), relay.attached(here.publish):
                await until(lambda: r1.stream.clients, "the relay open")
                r1.fault("A")
                r1.fault("B")
                await until(lambda: "B" in here.codes(), "A and B relayed")
                r1.fault("C")  # a repeat of A or B would come before C
                await until(lambda: "C" in here.codes(), "C relayed")
                assert here.codes() == ["A", "B", "C"]

    asyncio.run(scenario())


def test_a_peer_replaced_under_its_name_is_relayed_from_its_new_address() -> None:
    async def scenario() -> None:
        async with fleet() as (relay, robots, _table, add):
            here = Listener()
            robots["r1"] = Robot()
            add("r1", at="hang")  # the old tunnel: its port answers, then nothing comes
            with relay.attached(here.publish):
                await until(lambda: "r1" in relay._relays, "a relay on the old address")
                add("r1")  # the robot connected again: a new Peer, a new address
                await until(lambda: robots["r1"].stream.clients, "the relay on the new one")
                robots["r1"].fault("A")
                await until(lambda: here.codes() == ["A"], "A relayed")

    asyncio.run(scenario())


def test_a_stream_refetches_ids_from_before_its_start_but_not_its_start() -> None:
    stream = FaultStream(SseSlots(1), 30.0, first_id=2000)
    assert stream.replay(2000) == []  # its position before any event: nothing missed
    frames = stream.replay(1999)  # an id of the process before: its events are not kept
    assert b'"reason":"gateway_restarted"' in frames[0] and frames[0].startswith(b"id: 2000\n")
    stream.publish("fault_confirmed", {})
    assert stream.last_id == 2001 and len(stream.replay(2000)) == 1
    assert b"gateway_restarted" in stream.replay(5)[0] and len(stream.replay(5)) == 2
    stored: list[int] = []
    fresh = FaultStream(SseSlots(1), 30.0, persist=stored.append)
    assert stored == [fresh.reserved] and fresh.reserved > fresh.last_id  # a block at once
    for _ in range(3):
        fresh.publish_relayed("fault_confirmed", {})
    assert all(i < stored[-1] for i, _, _ in fresh.ring)  # ids below what is stored


def test_a_first_open_without_events_resumes_from_the_peers_position() -> None:
    async def scenario() -> None:
        async with fleet("r1") as (relay, robots, _table, _add):
            r1, here = robots["r1"], Listener()
            r1.fault("OLD")  # before any client here: not relayed, not replayed
            with relay.attached(here.publish):
                await until(lambda: r1.stream.clients, "the relay open")
            await until(lambda: not r1.stream.clients, "the relay closed")
            r1.fault("B")
            with relay.attached(here.publish):
                await until(lambda: here.codes() == ["B"], "B replayed")
            assert r1.asked == [None, "1"]  # the position r1 answered the first open with

    asyncio.run(scenario())
