"""Cyclic subscriptions: create, list, detail, update, delete, and the SSE stream of samples."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from ..errors import not_found
from ..http.jsonutil import json_response, read_json_body
from ..http.resource_helpers import href, resolve_entity
from ..http.routes import Registry
from ..http.state import state_of
from ..model.roles import Role
from .engine import PushEngine
from .keys import PUSH_DELIVERY
from .model import Subscription
from .rules import SUBSCRIBABLE, subscription_create, subscription_update

TYPES = SUBSCRIBABLE


def engine_of(request: web.Request) -> PushEngine:
    """The push engine of a request's app."""
    return request.app[PUSH_DELIVERY].engine


def _find(request: web.Request) -> tuple[PushEngine, Subscription]:
    engine = engine_of(request)
    entity = resolve_entity(request)
    sub_id = request.match_info["subscription_id"]
    sub = engine.subscriptions.get(sub_id)
    if sub is None or (sub.entity_type, sub.entity_id) != (entity.kind, entity.id):
        raise not_found(f"Cyclic subscription '{sub_id}' not found on {entity.type} "
                        f"'{entity.id}'", entity_id=entity.id, subscription_id=sub_id)
    return engine, sub


def _body(engine: PushEngine, sub: Subscription, xv: str) -> dict[str, Any]:
    """The subscription body; x-vendor `peers` shows its copies on peers (mixed entities)."""
    body = sub.body(xv)
    peers = engine.links.body(sub) if engine.links is not None else None
    if peers:
        body[xv]["peers"] = peers
    return body


async def create(request: web.Request) -> web.Response:
    """Create a cyclic subscription (201 with Location)."""
    state = state_of(request)
    engine = engine_of(request)
    entity = resolve_entity(request)
    body = await read_json_body(request)
    providers = request.app[PUSH_DELIVERY].collections
    spec = subscription_create(body, entity.kind, entity.id, engine.max_duration,
                               {name: True for name in providers})
    sub = engine.create_subscription(spec, request.headers.get("X-Client-Id"), time.time())
    if engine.links is not None:  # members on peers: a copy on each, merged per tick
        await engine.links.link(sub, "cyclic-subscriptions", dict(body), request)
    location = href(f"{entity.path}/cyclic-subscriptions/{sub.id}")
    return json_response(_body(engine, sub, state.xv), status=201,
                         headers={"Location": location})


async def list_subscriptions(request: web.Request) -> web.Response:
    """Subscriptions of the entity."""
    state = state_of(request)
    engine = engine_of(request)
    entity = resolve_entity(request)
    return json_response({"items": [_body(engine, s, state.xv) for s in
                                    engine.subscriptions_of(entity.kind, entity.id)]})


async def detail(request: web.Request) -> web.Response:
    """One subscription."""
    engine, sub = _find(request)
    return json_response(_body(engine, sub, state_of(request).xv))


async def update(request: web.Request) -> web.Response:
    """Change interval and/or duration (a duration restarts the expiry from now)."""
    engine, sub = _find(request)
    body = await read_json_body(request)
    interval, duration = subscription_update(body, engine.max_duration)
    engine.update_subscription(sub, interval, duration, time.time())
    if engine.links is not None:
        engine.links.update(sub, {k: v for k, v in (("interval", interval),
                                                    ("duration", duration)) if v is not None})
    return json_response(_body(engine, sub, state_of(request).xv))


async def delete(request: web.Request) -> web.Response:
    """Delete a subscription; its stream closes."""
    engine, sub = _find(request)
    engine.remove_subscription(sub)
    return web.Response(status=204)


async def events(request: web.Request) -> web.StreamResponse:
    """The SSE stream of `{timestamp, payload}` events at the subscription's interval."""
    engine, sub = _find(request)
    engine.hub.acquire()
    sub.streamed = True
    return await engine.hub.serve(request, sub.channel, [],
                                  on_gone=lambda: engine.remove_subscription(sub))


def register(reg: Registry) -> None:
    """Declare the cyclic subscription routes."""
    base = "/cyclic-subscriptions"
    item = base + "/{subscription_id}"
    kw: dict[str, Any] = {"types": TYPES}
    reg.entity_routes("GET", base, list_subscriptions, response="ListEnvelope",
                      summary="List cyclic subscriptions", **kw)
    reg.entity_routes("POST", base, create, role=Role.OPERATOR, status=201, request="Object",
                      summary="Create a cyclic subscription", **kw)
    reg.entity_routes("GET", item, detail, summary="Cyclic subscription", **kw)
    reg.entity_routes("PUT", item, update, role=Role.OPERATOR, request="Object",
                      summary="Change a cyclic subscription's interval or duration", **kw)
    reg.entity_routes("DELETE", item, delete, role=Role.OPERATOR, status=204,
                      summary="Delete a cyclic subscription", **kw)
    reg.entity_routes("GET", item + "/events", events, streaming=True,
                      summary="SSE stream of a cyclic subscription", **kw)
