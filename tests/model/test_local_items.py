"""The collections whose local items the fleet forwarder resolves bare item ids against."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from gateway.federation.forward import Forwarder
from gateway.http.routes import Registry
from gateway.model.entities import Entity


def test_the_route_table_holds_the_local_listers_of_its_collections() -> None:
    from gateway.app import build_registry

    assert Registry("vendor").local_items == {}  # importing the features registers nothing
    reg = build_registry("vendor", set())
    assert sorted(reg.local_items) == ["configurations", "data", "operations"]


def test_a_bare_id_is_resolved_through_the_lister_of_the_state_route_table() -> None:
    async def data_items(state: Any, entity: Entity) -> list[dict[str, Any]]:
        return [{"id": "engine_temp", "x-vendor": {"ros2": {"topic": "/engine/temp"},
                                                   "member_ids": ["temp_sensor"]}}]

    async def no_peer_items(*args: Any) -> list[Any]:
        return []

    reg = Registry("vendor")
    reg.lists_items("data", data_items)
    fed: Any = SimpleNamespace(state=SimpleNamespace(registry=reg), xv="x-vendor",
                               rename=lambda peer, item: item, peer_items=no_peer_items,
                               view=SimpleNamespace(peers_of=lambda kind, eid: []))
    resolve = Forwarder(fed)._resolve_bare
    fn = Entity("functions", "powertrain", "powertrain")
    request: Any = None  # read only when peers answer
    assert asyncio.run(resolve(request, fn, "data", "engine_temp")) == \
        ("temp_sensor", "/engine/temp")
    assert asyncio.run(resolve(request, fn, "data", "other")) == (None, "other")
    # a collection without a lister is answered here, the id unchanged
    assert asyncio.run(resolve(request, fn, "operations", "x")) == (None, "x")
