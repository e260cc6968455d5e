"""Fault triggers on apps: threshold rules over data topics that raise and clear faults."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import not_found
from ..http.jsonutil import json_response, read_json_body
from ..http.resource_helpers import href, resolve_entity
from ..http.routes import Registry
from ..http.state import state_of
from ..model.roles import Role
from .fault_engine import FaultTriggerEngine
from .fault_rules import Rule, check_capacity
from .keys import PUSH_DELIVERY
from .settings import FaultTriggerSettings


def _engine(request: web.Request) -> FaultTriggerEngine:
    state = state_of(request)
    if not state.settings.typed(FaultTriggerSettings.from_settings).enabled:
        raise state.wire.errors.feature_absent("fault-triggers",
                                               "Set fault_triggers.enabled to true")
    return request.app[PUSH_DELIVERY].fault_triggers


async def create(request: web.Request) -> web.Response:
    """Create a rule (201 with Location)."""
    engine = _engine(request)
    app = resolve_entity(request)
    body = await read_json_body(request)
    check_capacity(len(engine.rules),
                   state_of(request).settings.typed(FaultTriggerSettings.from_settings).max_rules)
    rule = engine.create(app, body)
    return json_response(rule.body(), status=201,
                         headers={"Location": href(f"{app.path}/fault-triggers/{rule.id}")})


async def list_rules(request: web.Request) -> web.Response:
    """Rules of the app."""
    engine = _engine(request)
    app = resolve_entity(request)
    return json_response({"items": [r.body() for r in engine.of_app(app.id)]})


def _rule(request: web.Request) -> tuple[FaultTriggerEngine, Rule]:
    engine = _engine(request)
    app = resolve_entity(request)
    rid = request.match_info["trigger_id"]
    rule = engine.rules.get(rid)
    if rule is None or rule.app_id != app.id:
        raise not_found(f"Fault trigger '{rid}' not found on app '{app.id}'",
                        app_id=app.id, trigger_id=rid)
    return engine, rule


async def detail(request: web.Request) -> web.Response:
    """One rule."""
    _, rule = _rule(request)
    return json_response(rule.body())


async def delete(request: web.Request) -> web.Response:
    """Delete a rule (a crossed rule clears its fault)."""
    engine, rule = _rule(request)
    engine.delete(rule)
    return web.Response(status=204)


def register(reg: Registry) -> None:
    """Declare the fault-trigger routes (apps only)."""
    kw: dict[str, Any] = {"types": ("apps",), "feature": "fault-triggers"}
    item = "/fault-triggers/{trigger_id}"
    reg.entity_routes("GET", "/fault-triggers", list_rules, response="ListEnvelope",
                      summary="List fault-trigger rules", **kw)
    reg.entity_routes("POST", "/fault-triggers", create, role=Role.OPERATOR, status=201,
                      request="Object", summary="Create a fault-trigger rule", **kw)
    reg.entity_routes("GET", item, detail, summary="Fault-trigger rule", **kw)
    reg.entity_routes("DELETE", item, delete, role=Role.OPERATOR, status=204,
                      summary="Delete a fault-trigger rule", **kw)
