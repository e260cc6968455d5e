"""Faults of plugin-owned entities: the plugin's fault provider, else the faults it raised."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import not_found
from ..faults import views
from ..faults.keys import service
from ..faults.model import CLEARED, parse_status_filter
from ..faults.scope import in_scope
from ..faults.wire import FAULTS as FAULT_WIRE
from ..http.jsonutil import json_response
from ..http.resource_helpers import envelope
from .api import FAULTS
from .served import Served, items_of


def sources(s: Served) -> list[str]:
    """Fault sources the entity owns: its own and those of its member apps of plugins."""
    return s.manager.fault_sources(s.entity, s.state.cache.entities)


async def serve(s: Served) -> web.StreamResponse:
    """GET/DELETE .../faults[/{code}] of a plugin entity."""
    provider = s.provider(FAULTS)
    if provider is not None:
        return await _from_provider(s, provider)
    return await _from_manager(s)


async def _from_provider(s: Served, provider: Any) -> web.StreamResponse:
    eid = s.eid
    if s.action == "detail":
        code = s.request.match_info["fault_code"]
        body = await s.call(provider.get_fault, eid, code, entity_id=eid)
        if not isinstance(body, dict):
            raise not_found(f"Fault '{code}' not found on {s.entity.type} '{eid}'",
                            entity_id=eid, fault_code=code)
        return json_response(body)
    if s.action == "clear":
        await s.call(provider.clear_fault, eid, s.request.match_info["fault_code"],
                     entity_id=eid)
        return web.Response(status=204)
    items = items_of(await s.call(provider.list_faults, eid, entity_id=eid), "fault_code")
    if s.action == "clear_all":
        for item in items:
            await s.call(provider.clear_fault, eid, item["fault_code"], entity_id=eid)
        return web.Response(status=204)
    return json_response(envelope(s.state, items, eid))


async def _from_manager(s: Served) -> web.StreamResponse:
    svc = service(s.request)
    own = sources(s)
    wire = s.state.serializer(FAULT_WIRE)  # the same shapes as every other entity's faults
    if s.action == "list":
        value = s.request.query.get("status")
        statuses = parse_status_filter(value)
        if statuses is None:
            raise wire.bad_status_filter(value)
        items = [views.list_item(wire, f) for f in svc.select(statuses, own)]
        return json_response(envelope(s.state, items, s.eid))
    scope = {f.code for f in svc.faults.values() if in_scope(f.sources, own)}
    if s.action == "clear_all":
        svc.clear(sorted(c for c in scope if svc.faults[c].status != CLEARED), scope=scope)
        return web.Response(status=204)
    code = s.request.match_info["fault_code"]
    fault = svc.get(code)
    if fault is None or code not in scope:
        raise not_found(f"Fault '{code}' not found on {s.entity.type} '{s.eid}'",
                        entity_id=s.eid, fault_code=code)
    if s.action == "clear":
        svc.clear([code], scope=scope)
        return web.Response(status=204)
    frames = await svc.frames(code)
    body: dict[str, Any] = views.detail(wire, fault, frames, svc.correlation_of(code))
    return json_response(body)
