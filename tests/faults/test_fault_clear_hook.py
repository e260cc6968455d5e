"""The global clear's hook for a lock manager, and the clear cascade, without ROS."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.discovery.cache import EntityCache
from gateway.discovery.runtime import HostInfo
from gateway.faults import handlers as resource
from gateway.faults.correlation import CorrelationEngine, parse_config
from gateway.faults.keys import FAULT_SERVICE
from gateway.faults.model import CLEARED, CONFIRMED, FaultRecord
from gateway.faults.service import FaultService
from gateway.faults.store import FaultStore
from gateway.faults.stream import FaultStream, SseSlots
from gateway.http.routes import Registry
from gateway.http.state import STATE, GatewayState
from gateway.settings.config import load

RULES = {"rules": [{"id": "h", "mode": "hierarchical", "root_cause": {"codes": ["ROOT"]},
                    "symptoms": ["SYM_*"], "window_ms": 1000}]}


def service() -> tuple[GatewayState, FaultService]:
    state = GatewayState(settings=load(None, []), registry=Registry())
    state.cache = EntityCache(16, HostInfo("host"))  # no entities: events carry none
    svc = FaultService(state, SseSlots(2))
    svc.writer.attach(FaultStore(None))
    svc.stream = FaultStream(SseSlots(2), 30.0)
    svc.engine = CorrelationEngine(parse_config(RULES))
    for i, code in enumerate(("ROOT", "SYM_A", "SYM_B", "LOCKED", "OTHER")):
        svc.faults[code] = FaultRecord(code=code, severity=2, description="", status=CONFIRMED,
                                       counter=-1, occurrence_count=1, first_ns=i, last_ns=i,
                                       sources=[f"/n/{code.lower()}"])
    svc.engine.on_onset("ROOT", 2, 0)
    svc.engine.on_onset("SYM_A", 2, 1)
    svc.engine.on_onset("SYM_B", 2, 2)
    return state, svc


def test_clear_cascades_to_symptoms() -> None:
    _, svc = service()

    async def scenario() -> None:
        assert svc.clear(["ROOT"]) == ["ROOT", "SYM_A", "SYM_B"]
        await svc.settled()  # committed by the writer thread

    asyncio.run(scenario())
    assert {c for c, f in svc.faults.items() if f.status == CLEARED} == {"ROOT", "SYM_A",
                                                                          "SYM_B"}
    assert svc.engine.muted_faults() == []
    assert svc.store is not None and set(svc.store.load_faults()) == {"ROOT", "SYM_A", "SYM_B"}
    assert svc.stream is not None and svc.stream.last_id == 1  # published after the commit


def test_clear_within_scope_keeps_other_symptoms() -> None:
    _, svc = service()

    async def scenario() -> None:
        assert svc.clear(["ROOT"], scope={"ROOT", "SYM_A"}) == ["ROOT", "SYM_A"]
        await svc.settled()

    asyncio.run(scenario())
    assert svc.faults["SYM_B"].status == CONFIRMED and not svc.engine.is_muted("SYM_B")


def test_global_clear_skips_what_a_filter_protects() -> None:
    state, svc = service()
    seen: list[tuple[str, list[str]]] = []

    def locked(request: web.Request, code: str, sources: list[str]) -> bool:
        seen.append((code, sources))
        return code in ("LOCKED", "SYM_B")

    svc.hooks.clear_filters.append(locked)

    async def scenario() -> None:
        app = web.Application()
        app[STATE], app[FAULT_SERVICE] = state, svc
        app.router.add_delete("/faults", resource.clear_all)
        async with TestServer(app) as server, aiohttp.ClientSession() as session:
            async with session.delete(server.make_url("/faults")) as resp:
                assert resp.status == 204

    asyncio.run(scenario())
    status: dict[str, Any] = {c: f.status for c, f in svc.faults.items()}
    assert status == {"ROOT": CLEARED, "SYM_A": CLEARED, "SYM_B": CONFIRMED,
                      "LOCKED": CONFIRMED, "OTHER": CLEARED}
    assert ("LOCKED", ["/n/locked"]) in seen


def test_cached_list_body_follows_the_fault_state() -> None:
    _, svc = service()
    state = svc.state

    async def scenario() -> None:
        app = web.Application()
        app[STATE], app[FAULT_SERVICE] = state, svc
        app.router.add_get("/faults", resource.list_all)
        async with TestServer(app) as server, aiohttp.ClientSession() as session:
            async def statuses() -> dict[str, str]:
                async with session.get(server.make_url("/faults?status=all")) as resp:
                    body = await resp.json()
                return {i["fault_code"]: i[state.xv]["status"] for i in body["items"]}

            first = await statuses()
            assert first == await statuses()  # served from the cache
            assert svc.bodies.hits >= 1
            svc.clear(["OTHER"])
            await svc.settled()
            after = await statuses()
            assert first["OTHER"] == CONFIRMED and after["OTHER"] == CLEARED

    asyncio.run(scenario())


def test_body_cache_is_bounded() -> None:
    from gateway.faults.bodies import BodyCache

    cache = BodyCache(capacity=2)
    cache.put("a", 1, b"A")
    assert cache.get("a", 1) == b"A" and cache.get("a", 2) is None
    cache.put("b", 1, b"B")
    cache.put("c", 1, b"C")  # full: the older bodies go
    assert cache.get("a", 1) is None and cache.get("c", 1) == b"C"
