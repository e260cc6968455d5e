"""Triggers: create, list, detail, lifetime update, delete, and the SSE stream of firings."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from ..errors import ApiError, not_found
from ..http.jsonutil import json_response, read_json_body
from ..http.resource_helpers import href, resolve_entity
from ..http.routes import Registry, entity_type_of
from ..http.state import state_of
from ..model.roles import Role
from .engine import PushEngine
from .model import ACTIVE, Trigger
from .rules import trigger_create, trigger_update
from .sse import CLOSE, Channel
from .subscription_handlers import engine_of


def _engine(request: web.Request) -> PushEngine:
    engine = engine_of(request)
    if not engine.triggers_enabled:
        raise state_of(request).wire.errors.feature_absent(
            "triggers", "Set triggers.enabled to true")
    return engine


def _body(request: web.Request, engine: PushEngine, trig: Trigger) -> dict[str, Any]:
    """The trigger body; x-vendor names the observed topic once it is resolved and sampled."""
    body = trig.body()
    xv: dict[str, Any] = {"fired": trig.fired}
    resolved = engine.topics.resolved(trig)
    if resolved is not None:
        xv.update(topic=resolved[0], type=resolved[1])
    peers = engine.links.body(trig) if engine.links is not None else None
    if peers:
        xv["peers"] = peers
    body[state_of(request).xv] = xv
    return body


def _find(request: web.Request) -> tuple[PushEngine, Trigger]:
    engine = _engine(request)
    entity = resolve_entity(request)
    tid = request.match_info["trigger_id"]
    trig = engine.triggers.get(tid)
    if trig is not None and trig.expired(time.time()):
        engine.remove_trigger(trig, terminated=True)
        trig = None
    if trig is None or (trig.entity_type, trig.entity_id) != (entity.kind, entity.id):
        raise not_found(f"Trigger '{tid}' not found on {entity.type} '{entity.id}'",
                        entity_id=entity.id, trigger_id=tid)
    return engine, trig


async def create(request: web.Request) -> web.Response:
    """Create a trigger (201 with Location)."""
    engine = _engine(request)
    entity = resolve_entity(request)
    body = await read_json_body(request)
    spec = trigger_create(body, entity.kind, entity.id)
    trig = engine.create_trigger(spec, dict(body), time.time())
    if engine.links is not None:  # members on peers: a leased copy on each
        await engine.links.link(trig, "triggers", dict(body), request)
    return json_response(_body(request, engine, trig), status=201,
                         headers={"Location": href(f"{entity.path}/triggers/{trig.id}")})


async def list_triggers(request: web.Request) -> web.Response:
    """Triggers of the entity."""
    engine = _engine(request)
    entity = resolve_entity(request)
    now = time.time()
    items = [_body(request, engine, t) for t in engine.triggers_of(entity.kind, entity.id)
             if not t.expired(now)]
    return json_response({"items": items})


async def detail(request: web.Request) -> web.Response:
    """One trigger."""
    engine, trig = _find(request)
    return json_response(_body(request, engine, trig))


async def update(request: web.Request) -> web.Response:
    """A new lifetime: expiry = now + lifetime."""
    engine, trig = _find(request)
    lifetime = trigger_update(await read_json_body(request))
    engine.set_lifetime(trig, lifetime, time.time())
    return json_response(_body(request, engine, trig))


async def delete(request: web.Request) -> web.Response:
    """Delete a trigger; its stream closes."""
    engine, trig = _find(request)
    engine.remove_trigger(trig)
    return web.Response(status=204)


async def events(request: web.Request) -> web.StreamResponse:
    """The SSE stream of the trigger's firings (queued ones first).

    A trigger that ended (one-shot fired, lifetime, entity gone) while no client was attached
    hands its undelivered events to the next client once, then the stream closes.
    """
    try:
        engine, trig = _find(request)
    except ApiError as exc:
        if exc.status != 404:
            raise
        engine = _engine(request)
        kind, entity_id = entity_type_of(request)  # the entity itself may have left
        held = engine.take_parked(kind, entity_id, request.match_info["trigger_id"],
                                  time.time())
        if not held:
            raise
        engine.hub.acquire()
        return await engine.hub.serve(request, Channel(engine.hub), [*held, CLOSE])
    if trig.status != ACTIVE:
        raise not_found(f"Trigger '{trig.id}' is not active", trigger_id=trig.id)
    engine.hub.acquire()
    backlog = list(trig.pending)
    trig.pending.clear()
    return await engine.hub.serve(request, trig.channel, backlog)


def register(reg: Registry) -> None:
    """Declare the trigger routes."""
    item = "/triggers/{trigger_id}"
    kw: dict[str, Any] = {"feature": "triggers"}
    reg.entity_routes("GET", "/triggers", list_triggers, response="ListEnvelope",
                      summary="List triggers", **kw)
    reg.entity_routes("POST", "/triggers", create, role=Role.OPERATOR, status=201,
                      request="Object", summary="Create a trigger", **kw)
    reg.entity_routes("GET", item, detail, summary="Trigger", **kw)
    reg.entity_routes("PUT", item, update, role=Role.OPERATOR, request="Object",
                      summary="Change a trigger's lifetime", **kw)
    reg.entity_routes("DELETE", item, delete, role=Role.OPERATOR, status=204,
                      summary="Delete a trigger", **kw)
    reg.entity_routes("GET", item + "/events", events, streaming=True,
                      summary="SSE stream of a trigger", **kw)
