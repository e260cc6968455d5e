"""The fan-out of merged reads: pooled sends, one deadline, fallbacks and answer reuse."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.federation.client import PeerClient
from gateway.federation.combine import PeerAnswer, combine
from gateway.federation.fanout import gather
from gateway.federation.health import TIMEOUT, UNREACHABLE, PeerHealth
from gateway.federation.peers import Peer
from gateway.federation.settings import Budgets

XV = "x-vendor"
STATE: dict[str, Any] = {"topic": "/a"}


def data(topic: str, member: str) -> dict[str, Any]:
    return {"id": topic, "name": topic, "category": "currentData",
            XV: {"ros2": {"direction": "publish", "topic": topic, "type": "T"},
                 "member_ids": [member]}}


async def broken(_request: web.Request) -> web.Response:
    return web.json_response({"error_code": "x"}, status=503)


def make_app() -> web.Application:
    async def items(request: web.Request) -> web.Response:
        return web.json_response({"items": [data(STATE["topic"], "temp")], XV: {}})

    async def chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(b'{"items": []}')
        await resp.write_eof()
        return resp

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({"items": []})

    app = web.Application()
    app.router.add_get("/api/v1/items", items)
    app.router.add_get("/api/v1/chunked", chunked)
    app.router.add_get("/api/v1/slow", slow)
    app.router.add_get("/api/v1/broken", broken)
    return app


class Table:
    """The part of the peer table the fan-out uses."""

    def __init__(self, peers: list[Peer]) -> None:
        self.peers = {p.name: p for p in peers}
        self.suspected: list[str] = []

    def suspect(self, name: str) -> None:
        self.suspected.append(name)


def peer(name: str, port: int, online: bool = True) -> Peer:
    p = Peer(name, f"http://127.0.0.1:{port}", False,
             PeerClient(f"http://127.0.0.1:{port}", Budgets(), 1 << 20))
    p.health = PeerHealth()
    if online:
        p.health.record(True, 0.0)
    return p


def test_calls_answers_reuse_and_the_deadline() -> None:
    async def scenario() -> None:
        async with TestServer(make_app()) as server:
            a, b, off = peer("a", server.port), peer("b", server.port), \
                peer("off", server.port, online=False)
            table: Any = Table([a, b, off])
            calls = [("a", "/items", {}), ("b", "/items", {}), ("off", "/items", {}),
                     ("gone", "/items", {})]
            first = await gather(table, calls, 2.0)  # connections made on this first call
            assert [x.reason for x in first] == [None, None, UNREACHABLE, UNREACHABLE]
            assert first[0].items[0]["id"] == "/a"
            again = await gather(table, [calls[0], ("b", "/chunked", {})], 2.0)
            assert again[0] is first[0]  # the same bytes: the answer parsed last time
            # b's call went out on its pooled connection; a chunked answer is read again
            # by the general client
            assert again[1].ok and again[1].items == []
            STATE["topic"] = "/b"
            changed = await gather(table, calls[:1], 2.0)
            assert changed[0] is not first[0] and changed[0].items[0]["id"] == "/b"
            # one deadline: a hung peer answers `timeout`, the others theirs, and the hung
            # call's connection is closed, not pooled again
            out = await gather(table, [("a", "/slow", {}), ("b", "/items", {})], 0.3)
            assert [x.reason for x in out] == [TIMEOUT, None]
            assert "a" in table.suspected
            assert all(not c.closed for c in a.client._raw._idle)  # type: ignore[union-attr]
            assert (await gather(table, calls[:1], 2.0))[0].ok
            for p in (a, b, off):
                await p.client.close()

    asyncio.run(scenario())


def test_an_answer_under_500_marks_the_peer_answering() -> None:
    """An answered read stands in for a full health probe (beacon.py): it is noted per peer,
    but not for an error status of the peer's own."""
    async def scenario() -> None:
        async with TestServer(make_app()) as server:
            a = peer("a", server.port)
            table: Any = Table([a])
            await gather(table, [("a", "/broken", {})], 2.0)
            assert a.answered_at == float("-inf")
            before = time.monotonic()
            assert (await gather(table, [("a", "/items", {})], 2.0))[0].ok
            assert before <= a.answered_at <= time.monotonic()
            await a.client.close()

    asyncio.run(scenario())


def test_a_prepared_answer_is_reused_for_the_same_view_only() -> None:
    answer = PeerAnswer("r", items=[data("/t", "temp")], body={})
    view1, view2 = [], []  # like the fleet view: compared by identity, not hashable
    renames = {"temp": "r__temp"}

    def rename(gateway: str, app_id: str) -> str:
        return renames.get(app_id, app_id)

    one = combine("data", XV, [data("/t", "temp")], [answer], rename, memo=view1)
    assert [i["id"] for i in one.items] == ["temp:/t", "r__temp:/t"]
    renames["temp"] = "robot__temp"  # without a new view the prepared items stand
    two = combine("data", XV, [], [answer], rename, memo=view1)
    assert two.items[0][XV]["member_ids"] == ["r__temp"] and two.items[0]["id"] == "/t"
    assert one.items[1]["id"] == "r__temp:/t"  # ids are assigned on copies
    three = combine("data", XV, [], [answer], rename, memo=view2)
    assert three.items[0][XV]["member_ids"] == ["robot__temp"]


def test_fragments_serialize_as_the_items_do() -> None:
    from gateway.http.jsonutil import dumps

    answers = [PeerAnswer(p, items=[data("/t", "temp"), data(f"/{p}", "x")], body={})
               for p in ("r1", "r2")]
    view: list[Any] = []

    def rename(gateway: str, app_id: str) -> str:
        return f"{gateway}__{app_id}"

    for _ in range(2):  # the second merge serializes nothing again
        plain = combine("data", XV, [data("/t", "temp")], answers, rename, memo=view)
        framed = combine("data", XV, [data("/t", "temp")], answers, rename, memo=view,
                         fragments=True)
        assert dumps(framed.items) == dumps(plain.items)
    assert [i["id"] for i in plain.items] == ["temp:/t", "r1__temp:/t", "/r1",
                                              "r2__temp:/t", "/r2"]


def test_fragments_of_items_without_ids() -> None:
    from gateway.http.jsonutil import dumps

    def version(v: str) -> dict[str, Any]:
        return {"version": v, "base_uri": "/api/v1", "vendor_info": {"version": v, "name": "g"}}

    answer = PeerAnswer("r", items=[version("1.0"), version("2.0")], body={})
    view: list[Any] = []
    for _ in range(2):
        framed = combine("version-info", XV, [version("0.1")], [answer],
                         lambda g, a: a, memo=view, fragments=True)
        assert orjson_loads(dumps(framed.items)) == [
            version("0.1"), {**version("1.0"), XV: {"peer": "r"}},
            {**version("2.0"), XV: {"peer": "r"}}]


def orjson_loads(raw: bytes) -> Any:
    import orjson

    return orjson.loads(raw)
