"""Helpers shared by resource handlers: entity resolution, envelopes, references."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from ..errors import not_found
from ..model.entities import ENTITY_PARAM, SINGULAR, Entity, EntitySet
from . import hot
from .jsonutil import dumps
from .routes import API_PREFIX, entity_type_of
from .state import GatewayState, state_of


def entities(request: web.Request) -> EntitySet:
    """The current entity set."""
    return state_of(request).cache.entities


def local_member_apps(state: GatewayState, entity: Entity) -> list[Entity]:
    """Member apps whose nodes run on this robot (peer apps of the fleet view excluded)."""
    local = state.cache.local.apps
    return [a for a in state.cache.entities.member_apps(entity) if a.id in local]


def entity_not_found(kind: str, entity_id: str, request: web.Request | None = None) -> Exception:
    """404 for an unknown entity in the wire profile's words (the spec's without a request)."""
    if request is not None:
        return state_of(request).wire.errors.unknown_entity(kind, entity_id)
    word = SINGULAR[kind]
    return not_found(f"{word.capitalize()} not found: '{entity_id}'",
                     entity_id=entity_id, **{ENTITY_PARAM[kind]: entity_id})


def resolve_entity(request: web.Request, nested: bool = False) -> Entity:
    """The entity addressed by the request path; 404 when unknown (or of another type).

    `nested`: a nested discovery route (/areas/{id}/subareas, ...), whose unknown-id message
    names the entity type in the medkit profile.
    """
    kind, entity_id = entity_type_of(request)
    es = entities(request)
    entity = es.get(kind, entity_id)
    if entity is None:
        errors = state_of(request).wire.errors
        for other in ENTITY_PARAM:
            if other != kind and es.get(other, entity_id) is not None:
                raise errors.wrong_entity_type(kind, entity_id, other)
        raise errors.unknown_entity(kind, entity_id, nested=nested)
    return entity


def href(path: str) -> str:
    """A path under the API prefix."""
    return API_PREFIX + path


def federation(state: GatewayState) -> Any:
    """The federation service (aggregation on), else None."""
    return state.aggregation


def entity_ref(state: GatewayState, entity: Entity) -> dict[str, Any]:
    """Entity list item: id, name, type, href and the vendor block."""
    xv: dict[str, Any] = {"source": entity.source}
    if entity.kind == "apps":
        xv["is_online"] = entity.is_online
        if entity.component:
            xv["component_id"] = entity.component
    state.wire.entities.ref_vendor(entity, xv)
    fed = federation(state)
    if fed is not None:  # aggregation: who contributes it, and whether its owner answers
        xv["contributors"] = fed.view.contributors(entity.kind, entity.id) or ["local"]
        if not fed.view.available(entity.kind, entity.id):
            xv["available"] = False
    return {"id": entity.id, "name": entity.name, "type": entity.type,
            "href": href(entity.path), state.xv: xv}


def envelope(state: GatewayState, items: list[Any], entity_id: str | None = None,
             **extra: Any) -> dict[str, Any]:
    """The list envelope with x-vendor total_count (and entity_id when given)."""
    xv: dict[str, Any] = {"total_count": len(items)}
    if entity_id is not None:
        xv["entity_id"] = entity_id
    xv.update(extra)
    return {"items": items, state.xv: xv}


async def list_collection(request: web.Request, collection: str,
                          local_items: Callable[[GatewayState, Entity], list[dict[str, Any]]]
                          ) -> web.Response:
    """A collection list of the addressed entity: this gateway's cached items, merged with the
    peers' when aggregation names contributors."""
    state = state_of(request)
    entity = resolve_entity(request)
    fed = federation(state)
    peers = fed.contributors(request, entity) if fed is not None else []
    if peers:  # with the read cache the merged bytes are served again until a change
        return await fed.merged_response(
            request, (entity.kind, entity.id), lambda: state.cache.generation, collection,
            lambda: fed.merge_list(request, entity, collection, local_items(state, entity),
                                   peers=peers))
    key = (f"{collection}-list", entity.kind, entity.id)
    body = state.cache.body(key, lambda: dumps(envelope(state, local_items(state, entity),
                                                        entity.id)))
    # The cache is emptied on every generation change: a body it holds is the one this
    # handler would answer (and the entity still resolves). A peer answers a primary's
    # fan-out calls this way too.
    cache = state.cache
    hot.offer(state, request, lambda: cache.cached(key))
    return web.Response(body=body, content_type="application/json")
