"""Discovery routes: entity lists, details with capabilities, relationship answers."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..http import hot
from ..http.jsonutil import dumps, json_response
from ..http.resource_helpers import (
    entities,
    entity_not_found,
    entity_ref,
    envelope,
    federation,
    href,
    resolve_entity,
)
from ..http.routes import ENTITY_PARAM, ENTITY_TYPES, Registry
from ..http.state import GatewayState, state_of
from ..model import relations
from ..model.entities import Entity

NESTED = {"nested_discovery": True}  # invalid and unknown ids worded per type (medkit)


def capabilities(state: GatewayState, entity: Entity) -> list[dict[str, str]]:
    """Collections and sub-resources this entity type actually serves, from the registry."""
    prefix = f"/{entity.kind}/{{{ENTITY_PARAM[entity.kind]}}}/"
    seen: dict[str, dict[str, str]] = {}
    for route in state.registry:
        if route.method != "GET" or not route.path.startswith(prefix) or route.extra.get("stub"):
            continue
        if route.feature and route.feature not in state.features:  # e.g. locking disabled
            continue
        word = route.path[len(prefix):].split("/")[0]
        if word and "{" not in word and word != "docs" and word not in seen:
            seen[word] = {"name": word, "href": href(f"{entity.path}/{word}")}
    return list(seen.values())


def detail(state: GatewayState, entity: Entity) -> dict[str, Any]:
    """Entity detail: reference fields, capabilities, links and vendor block."""
    out = entity_ref(state, entity)
    if entity.description:
        out["description"] = entity.description
    out["capabilities"] = capabilities(state, entity)
    links = {"self": href(entity.path)}
    xv = out[state.xv]
    xv.setdefault("contributors", ["local"])
    if entity.external:
        xv["external"] = True
    if entity.tags:
        xv["tags"] = list(entity.tags)
    if entity.kind == "apps":
        node = entity.bound_fqn or entity.node_fqn
        fed = federation(state)
        origin = fed.view.app_origin(entity.id) if fed is not None else None
        if origin is not None and not origin.is_local:  # a peer's app: its node over there
            node = origin.node_fqn
        if node:  # an unbound manifest app has no node
            xv["ros2"] = {"node": node, "namespace": entity.namespace}
        if entity.component:
            xv["component_id"] = entity.component
            links["is-located-on"] = state.wire.entities.is_located_on(entity)
            links["belongs-to"] = href(f"{entity.path}/belongs-to")
    elif entity.kind == "components":
        if entity.identity:
            xv["identity"] = entity.identity
        if entity.area:
            links["area"] = href(f"/areas/{entity.area}")
        if entity.parent:
            links["parent"] = href(f"/components/{entity.parent}")
    elif entity.kind == "areas" and entity.parent:
        links["parent"] = href(f"/areas/{entity.parent}")
    out["_links"] = links
    state.wire.entities.detail_extras(entity, out)
    return out


def _list_handler(kind: str) -> Any:
    async def list_entities(request: web.Request) -> web.Response:
        state = state_of(request)
        body = state.cache.body(("list", kind), lambda: state_json(state, kind))
        hot.offer(state, request, _hot_body(state, ("list", kind)))
        return web.Response(body=body, content_type="application/json")

    list_entities.__doc__ = f"List {kind}"
    return list_entities


def state_json(state: GatewayState, kind: str) -> bytes:
    """Serialized top-level entity list of one kind (subareas and subcomponents are nested)."""
    of_kind = state.cache.entities.of(kind)
    items = [entity_ref(state, e) for e in of_kind.values()
             if not (e.parent and e.parent in of_kind)]
    return dumps(envelope(state, items))


async def get_entity(request: web.Request) -> web.Response:
    """Entity detail with capabilities (the body is cached per entity generation)."""
    state = state_of(request)
    entity = resolve_entity(request)
    key = ("detail", entity.kind, entity.id)
    body = state.cache.body(key, lambda: dumps(detail(state, entity)))
    hot.offer(state, request, _hot_body(state, key))
    return web.Response(body=body, content_type="application/json")


def _hot_body(state: GatewayState, key: tuple[str, ...]) -> hot.Probe:
    """A body cached per entity generation, for the fast path (gateway/http/hot.py).

    The cache is emptied on every generation change, so a body it holds is the one the
    handler would build (a detail also implies its entity still resolves).
    """
    cache = state.cache
    return lambda: cache.cached(key)


def _refs(request: web.Request, items: list[Entity], entity: Entity, **links: str) -> web.Response:
    state = state_of(request)
    body = envelope(state, [entity_ref(state, e) for e in items], entity.id)
    body["_links"] = {"self": href(request.path[len("/api/v1"):]), **links}
    return json_response(body)


async def app_is_located_on(request: web.Request) -> web.Response:
    """The component hosting an app (0 or 1 items)."""
    app = _app(request)
    return _rel(request, app, relations.is_located_on(entities(request), app))


async def app_belongs_to(request: web.Request) -> web.Response:
    """The area of the app's component (0 or 1 items)."""
    app = _app(request)
    return _rel(request, app, relations.belongs_to(entities(request), app))


def _app(request: web.Request) -> Entity:
    app_id = request.match_info["app_id"]
    app = entities(request).apps.get(app_id)
    if app is None:
        raise state_of(request).wire.errors.unknown_entity("apps", app_id, relation=True)
    return app


def _missing(state: GatewayState, word: str, entity_id: str) -> dict[str, Any]:
    return {"id": entity_id, "name": entity_id, "type": word, state.xv: {"missing": True}}


def _rel(request: web.Request, app: Entity, found: list[Entity | relations.Missing]
         ) -> web.Response:
    state = state_of(request)
    items: list[dict[str, Any]] = []
    for item in found:
        if isinstance(item, relations.Missing):
            ref = _missing(state, item.type, item.id)
            if item.unresolved_component:
                ref[state.xv]["unresolved_component"] = item.unresolved_component
            items.append(ref)
        else:
            items.append(entity_ref(state, item))
    body = envelope(state, items, app.id)
    body["_links"] = {"self": href(request.path[len("/api/v1"):]),
                      "app": href(app.path)}
    return json_response(body)


async def app_depends_on(request: web.Request) -> web.Response:
    """Apps this app depends on (manifest `depends_on`); unresolved ones marked missing."""
    state = state_of(request)
    app = _app(request)
    apps = entities(request).apps
    items = [entity_ref(state, apps[d]) if d in apps else _missing(state, "app", d)
             for d in app.depends_on]
    body = envelope(state, items, app.id)
    body["_links"] = {"self": href(f"{app.path}/depends-on"), "app": href(app.path)}
    return json_response(body)


async def component_hosts(request: web.Request) -> web.Response:
    """Apps hosted on a component."""
    comp = resolve_entity(request, nested=True)
    es = entities(request)
    return _refs(request, [es.apps[a] for a in comp.hosts if a in es.apps], comp,
                 component=href(comp.path))


async def function_hosts(request: web.Request) -> web.Response:
    """Apps that host a function."""
    func = resolve_entity(request, nested=True)
    es = entities(request)
    return _refs(request, [es.apps[a] for a in func.hosts if a in es.apps], func,
                 function=href(func.path))


async def component_depends_on(request: web.Request) -> web.Response:
    """Components this component depends on; unresolved ones marked missing."""
    state = state_of(request)
    comp = resolve_entity(request, nested=True)
    es = entities(request)
    items = [entity_ref(state, es.components[d]) if d in es.components
             else _missing(state, "component", d) for d in comp.depends_on]
    body = envelope(state, items, comp.id)
    body["_links"] = {"self": href(f"{comp.path}/depends-on"), "component": href(comp.path)}
    return json_response(body)


async def subcomponents(request: web.Request) -> web.Response:
    """Child components."""
    comp = resolve_entity(request, nested=True)
    return _refs(request, entities(request).subcomponents(comp.id), comp,
                 component=href(comp.path), parent=href(comp.path))


async def subcomponent(request: web.Request) -> web.Response:
    """One child component's detail."""
    comp = resolve_entity(request)
    sub = entities(request).components.get(request.match_info["sub_id"])
    if sub is None or sub.parent != comp.id:
        raise entity_not_found("components", request.match_info["sub_id"], request)
    return json_response(detail(state_of(request), sub))


async def area_components(request: web.Request) -> web.Response:
    """Components of an area."""
    area = resolve_entity(request, nested=True)
    comps = [c for c in entities(request).components.values() if c.area == area.id]
    return _refs(request, comps, area, area=href(area.path))


async def subareas(request: web.Request) -> web.Response:
    """Child areas."""
    area = resolve_entity(request, nested=True)
    return _refs(request, entities(request).subareas(area.id), area, area=href(area.path),
                 parent=href(area.path))


async def subarea(request: web.Request) -> web.Response:
    """One child area's detail."""
    area = resolve_entity(request)
    sub = entities(request).areas.get(request.match_info["sub_id"])
    if sub is None or sub.parent != area.id:
        raise entity_not_found("areas", request.match_info["sub_id"], request)
    return json_response(detail(state_of(request), sub))


def register(reg: Registry) -> None:
    """Declare the discovery routes."""
    for kind in ENTITY_TYPES:
        reg.add("GET", f"/{kind}", _list_handler(kind), tag=kind, response="EntityList",
                summary=f"List {kind}")
    reg.entity_routes("GET", "", get_entity, response="EntityDetail", summary="Entity detail")
    reg.add("GET", "/apps/{app_id}/is-located-on", app_is_located_on, tag="apps",
            response="EntityList")
    reg.add("GET", "/apps/{app_id}/belongs-to", app_belongs_to, tag="apps",
            response="EntityList")
    reg.add("GET", "/apps/{app_id}/depends-on", app_depends_on, tag="apps",
            response="EntityList")
    reg.add("GET", "/components/{component_id}/hosts", component_hosts, tag="components",
            response="EntityList", extra=NESTED)
    reg.add("GET", "/components/{component_id}/depends-on", component_depends_on,
            tag="components", response="EntityList", extra=NESTED)
    reg.add("GET", "/components/{component_id}/subcomponents", subcomponents,
            tag="components", response="EntityList", extra=NESTED)
    reg.add("GET", "/components/{component_id}/subcomponents/{sub_id}", subcomponent,
            tag="components", response="EntityDetail")
    reg.add("GET", "/areas/{area_id}/contains", area_components, tag="areas",
            response="EntityList", extra=NESTED)
    reg.add("GET", "/areas/{area_id}/components", area_components, tag="areas",
            response="EntityList", extra=NESTED)
    reg.add("GET", "/areas/{area_id}/subareas", subareas, tag="areas", response="EntityList",
            extra=NESTED)
    reg.add("GET", "/areas/{area_id}/subareas/{sub_id}", subarea, tag="areas",
            response="EntityDetail")
    reg.add("GET", "/functions/{function_id}/hosts", function_hosts, tag="functions",
            response="EntityList", extra=NESTED)
