"""Faults: the global list with correlation metadata, entity-scoped lists, detail, clears, stream."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import not_found
from ..http import hot
from ..http.jsonutil import JSON_TYPE, dumps, json_response
from ..http.resource_helpers import federation, resolve_entity
from ..http.routes import ENTITY_PARAM, Registry
from ..http.state import GatewayState, state_of
from ..model.entities import Entity
from ..model.roles import Role
from ..model.timestamps import iso
from .keys import service
from .model import CLEARED, parse_status_filter
from .scope import in_scope, owners
from .service import FaultService
from .wire import FAULTS


def _statuses(request: web.Request) -> frozenset[str]:
    value = request.query.get("status")
    statuses = parse_status_filter(value)
    if statuses is None:
        err = state_of(request).serializer(FAULTS).bad_status_filter(value)
        # on an entity route the reference names the entity too (`app_id`, `area_id`, ...)
        err.parameters = {**(err.parameters or {}), **{
            k: v for k, v in request.match_info.items() if k in ENTITY_PARAM.values()}}
        raise err
    return statuses


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1", "yes")


def _cached(body: bytes) -> web.Response:
    return web.Response(body=body, content_type=JSON_TYPE)


async def list_all(request: web.Request) -> web.Response:
    """All faults with correlation metadata."""
    state = state_of(request)
    svc = service(request)
    fed = federation(state)  # aggregation: every peer's faults too (no X-Vendor-No-Fan-Out)
    key = ("all", request.query_string)
    alone = fed is None or fed.answers_alone(request)
    if alone:  # a local body holds while the fault state does
        cached = svc.bodies.get(key, svc.generation)
        if cached is not None:
            _offer_all(state, request, svc, fed, key)
            return _cached(cached)

    def local() -> dict[str, Any]:
        faults = svc.visible(svc.select(_statuses(request)))
        engine = svc.engine
        wire = state.serializer(FAULTS)
        items = [wire.list_item(f) for f in faults]
        counts = {"muted_count": len(engine.muted), "cluster_count": engine.cluster_count()}
        body: dict[str, Any] = {"items": items, state.xv: wire.list_vendor(len(items), **counts),
                                **counts}
        if _flag(request, "include_muted"):
            body["muted_faults"] = engine.muted_faults()
        if _flag(request, "include_clusters"):
            body["clusters"] = engine.cluster_items(iso)
        return body

    if fed is not None and not alone:  # with the read cache the merged bytes are served again
        return await fed.merged_response(
            request, "faults", lambda: svc.generation, "faults",
            lambda: fed.merge_global_faults(request, local()))
    _offer_all(state, request, svc, fed, key)
    return _cached(svc.bodies.put(key, svc.generation, dumps(local())))


def _offer_all(state: GatewayState, request: web.Request, svc: FaultService, fed: Any,
               key: tuple[str, str]) -> None:
    """list_all's local body for the fast path: without aggregation, or with it to requests
    this gateway answers alone (no peer, or already on the fan-out path: a robot's answer to
    its primary's fan-out read)."""
    if fed is None:
        hot.offer(state, request, _hot_all(state, svc, key))
        return

    def probe(r: hot.HasHeaders) -> bytes | None:
        if state.aggregation is not fed or not fed.answers_alone(r):  # federation(state)
            return None
        return svc.bodies.cached(key, svc.generation)

    hot.offer_merged(state, request, probe)


def _hot_all(state: GatewayState, svc: FaultService, key: tuple[str, str]) -> hot.Probe:
    """list_all's cached body while the fault state holds, for the fast path (http/hot.py)."""
    def probe() -> bytes | None:
        if state.aggregation is not None:  # federation(state), inline: once per hot read
            return None
        return svc.bodies.cached(key, svc.generation)

    return probe


async def clear_all(request: web.Request) -> web.Response:
    """Clear every fault, skipping those a registered filter protects (e.g. locked entities)."""
    svc = service(request)
    # predicates (request, fault_code, sources) -> True when the fault must be skipped
    # (e.g. its entity is locked by another client)
    filters = svc.hooks.clear_filters
    codes = [f.code for f in svc.faults.values() if f.status != CLEARED
             and not any(skip(request, f.code, list(f.sources)) for skip in filters)]
    svc.clear(codes, scope=set(codes) if filters else None)
    await svc.settled()
    return web.Response(status=204)


async def stream(request: web.Request) -> web.StreamResponse:
    """Server-sent fault events (and the peers' on an aggregating gateway: FaultStream.relay)."""
    svc = service(request)
    assert svc.stream is not None
    return await svc.stream.serve(request)


async def list_entity(request: web.Request) -> web.Response:
    """Faults whose every reporting source the entity owns."""
    state = state_of(request)
    entity = resolve_entity(request)
    svc = service(request)
    fed = federation(state)  # aggregation: the faults peers hold for this entity
    peers = fed.contributors(request, entity) if fed is not None else []
    key = (entity.kind, entity.id, request.query_string)
    generation = (svc.generation, state.cache.generation)  # faults and entity membership
    if not peers:
        cached = svc.bodies.get(key, generation)
        if cached is not None:
            return _cached(cached)
    wire = state.serializer(FAULTS)

    def local() -> list[dict[str, Any]]:
        return [wire.list_item(f) for f in svc.select(_statuses(request), owners(svc, entity))]

    if peers:  # with the read cache the merged bytes are served again until a change
        return await fed.merged_response(
            request, (entity.kind, entity.id), lambda: (svc.generation, state.cache.generation),
            "faults",
            lambda: fed.merge_list(request, entity, "faults", local(), peers=peers))
    items = local()
    body = wire.list_vendor(len(items), entity, state.cache.entities)
    return _cached(svc.bodies.put(key, generation,
                                  dumps({"items": items, state.xv: body})))


def _scoped(request: web.Request) -> tuple[GatewayState, Entity, FaultService, Any]:
    state = state_of(request)
    entity = resolve_entity(request)
    svc = service(request)
    code = request.match_info["fault_code"]
    fault = svc.get(code)
    if fault is None or not in_scope(fault.sources, owners(svc, entity)):
        raise not_found(f"Fault '{code}' not found on {entity.type} '{entity.id}'",
                        entity_id=entity.id, fault_code=code)
    return state, entity, svc, fault


async def get_fault(request: web.Request) -> web.Response:
    """Fault detail with status flags, extended data and freeze frames."""
    state, _entity, svc, fault = _scoped(request)
    frames = await svc.frames(fault.code)
    body = state.serializer(FAULTS).detail(fault, frames, svc.correlation_of(fault.code))
    # Rosbag entries (docs/recorder.md): provider(state, entity, fault) -> snapshot entries.
    for provide in svc.hooks.snapshot_providers:
        body["environment_data"]["snapshots"].extend(provide(state, _entity, fault))
    return json_response(body)


async def clear_fault(request: web.Request) -> web.Response:
    """Clear one fault of the entity (its correlated symptoms only within the entity)."""
    state, entity, svc, fault = _scoped(request)
    svc.hooks.guard_clear(request, entity, fault.sources)  # a locked member refuses
    own = owners(svc, entity)
    scope = {f.code for f in svc.faults.values() if in_scope(f.sources, own)}
    svc.clear([fault.code], scope=scope)
    await svc.settled()
    return web.Response(status=204)


async def clear_entity(request: web.Request) -> web.Response:
    """Clear every fault in the entity's scope."""
    entity = resolve_entity(request)
    svc = service(request)
    own = owners(svc, entity)
    scope = {f.code for f in svc.faults.values() if in_scope(f.sources, own)}
    codes = sorted(c for c in scope if svc.faults[c].status != CLEARED)
    svc.hooks.guard_clear(request, entity,  # any locked member refuses the clear
                          [s for c in codes for s in svc.faults[c].sources])
    svc.clear(codes, scope=scope)
    await svc.settled()
    return web.Response(status=204)


def register(reg: Registry) -> None:
    """Declare the fault routes (server level and per entity)."""
    reg.add("GET", "/faults", list_all, tag="faults", response="ListEnvelope",
            summary="List all faults with correlation metadata")
    reg.add("DELETE", "/faults", clear_all, role=Role.OPERATOR, tag="faults", status=204,
            summary="Clear all faults")
    reg.add("GET", "/faults/stream", stream, tag="faults", streaming=True,
            summary="Fault events (server-sent events)")
    reg.entity_routes("GET", "/faults", list_entity, response="ListEnvelope",
                      summary="List the faults in the entity's scope")
    reg.entity_routes("DELETE", "/faults", clear_entity, role=Role.OPERATOR, status=204,
                      summary="Clear the entity's faults")
    reg.entity_routes("GET", "/faults/{fault_code}", get_fault, response="Object",
                      summary="Fault detail")
    reg.entity_routes("DELETE", "/faults/{fault_code}", clear_fault, role=Role.OPERATOR,
                      status=204, summary="Clear one fault")
