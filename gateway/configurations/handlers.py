"""Configurations: node parameters of an entity, with partial answers over several nodes.

On an app a parameter is addressed by its bare name; on components, functions and areas by
`<app_id>:<param>` (a bare name that exactly one member node has works too). A reset restores
the value the gateway first saw for the parameter (rclpy has no reset-to-default service).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ..errors import ApiError, not_found, vendor_error
from ..http.jsonutil import json_response
from ..http.resource_helpers import federation, local_member_apps, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..locks.guard import guard_members
from ..model.entities import Entity
from ..model.roles import Role
from ..ros.calls.parameters import (
    NodeFailed,
    NodeUnavailable,
    ParameterError,
    ParameterNotFound,
    ParameterRejected,
    ParameterStore,
    ValueNotConvertible,
)
from ..wire.bodies import configuration_value, read_object
from .listing import (
    has_parameter_services,
    local_items,
    node_of,
    param_item,
    parameter_store,
    partial_fields,
    per_member,
    served_node,
)
from .wire import CONFIGURATIONS


def parameter_error(exc: ParameterError, **parameters: Any) -> ApiError:
    """The HTTP error of one failed parameter request."""
    params = {"node": exc.node, **parameters}
    if isinstance(exc, NodeUnavailable):
        return vendor_error(503, "x-vendor-ros2-node-unavailable", str(exc), **params)
    if isinstance(exc, ParameterNotFound):
        return not_found(str(exc), **params)
    if isinstance(exc, ParameterRejected):
        return ApiError(400, "invalid-request", f"Node {exc.node} refused the value: {exc}",
                        parameters={**params, "reason": str(exc)})
    return vendor_error(500, "x-vendor-ros2-service-unavailable", str(exc), **params)


def _raise_worst(outcomes: list[tuple[Entity, Any]], entity_id: str) -> None:
    """When no member answered, the most severe failure (internal before unavailable)."""
    errors = [r for _, r in outcomes if isinstance(r, BaseException)]
    if not outcomes or len(errors) < len(outcomes):
        return
    for exc in errors:
        if not isinstance(exc, ParameterError):
            raise exc
    failures = [e for e in errors if isinstance(e, ParameterError)]  # every one of them
    for failure in failures:
        if isinstance(failure, NodeFailed):
            raise parameter_error(failure, entity_id=entity_id) from None
    raise parameter_error(failures[0], entity_id=entity_id) from None


async def _local_items(state: GatewayState, entity: Entity) -> list[dict[str, Any]]:
    return (await local_items(state, entity))[0]


async def list_configurations(request: web.Request) -> web.Response:
    """Parameters of every member node; partial when some nodes (or peers) do not answer."""
    state = state_of(request)
    entity = resolve_entity(request)
    fed = federation(state)
    peers = fed.contributors(request, entity) if fed is not None else []
    if peers:  # the peers' parameters are fetched while the local nodes answer
        answers = asyncio.ensure_future(fed.peer_items(request, entity, "configurations",
                                                       peers))
        try:
            items, partial, _ = await local_items(state, entity)
        except BaseException:
            answers.cancel()
            raise
        return json_response(fed.combine_list(entity, "configurations", items, partial,
                                              await answers))
    items, partial, outcomes = await local_items(state, entity)
    _raise_worst(outcomes, entity.id)
    return json_response({"items": items,
                          state.xv: state.serializer(CONFIGURATIONS).list_vendor(items, entity,
                                                                          **partial)})


async def find_parameter(state: GatewayState, entity: Entity, param_id: str
                         ) -> tuple[Entity, str]:
    """(member app, parameter name) of a configuration id; 404 when it names none."""
    member, sep, rest = param_id.partition(":")
    if entity.kind == "apps":
        return entity, (rest if sep and member == entity.id else param_id)
    apps = {a.id: a for a in local_member_apps(state, entity)}
    if sep and member in apps:
        return apps[member], rest
    # A bare name that exactly one member node has (nodes that do not answer are skipped).
    store = parameter_store(state)
    outcomes = await per_member(state, entity, lambda app: store.params(served_node(app)))
    owners = [app for app, result in outcomes if not isinstance(result, BaseException)
              and any(p.name == param_id for p in result)]
    if len(owners) == 1:
        return owners[0], param_id
    params: dict[str, Any] = {"entity_id": entity.id, "param_name": param_id, "id": param_id}
    if owners:
        params["candidates"] = [f"{a.id}:{param_id}" for a in owners]
        raise not_found(f"Configuration id '{param_id}' is ambiguous on {entity.type} "
                        f"'{entity.id}'; use one of: {', '.join(params['candidates'])}",
                        **params)
    raise not_found(f"Configuration '{param_id}' not found on {entity.type} '{entity.id}'",
                    **params)


async def _target(request: web.Request) -> tuple[GatewayState, ParameterStore, Entity, Entity,
                                                 str]:
    state = state_of(request)
    entity = resolve_entity(request)
    store = parameter_store(state)
    app, name = await find_parameter(state, entity, request.match_info["param_name"])
    served = has_parameter_services(state, app)
    if served is None:
        raise vendor_error(503, "x-vendor-ros2-node-unavailable",
                           f"The node of app '{app.id}' is not running", node=node_of(app))
    if served is False:
        raise not_found(f"App '{app.id}' has no parameters (its node serves none)",
                        entity_id=entity.id, param_name=name)
    return state, store, entity, app, name


async def get_configuration(request: web.Request) -> web.Response:
    """One parameter's value."""
    state, store, entity, app, name = await _target(request)
    try:
        p = await store.get(served_node(app), name)
    except ParameterError as exc:
        raise parameter_error(exc, entity_id=entity.id, param_name=name,
                              id=request.match_info["param_name"]) from None
    return json_response(param_item(state, store, app, p, entity.kind != "apps", entity.id))


async def set_configuration(request: web.Request) -> web.Response:
    """Set a parameter: `data` (or `value`) converted to the parameter's type."""
    state, store, entity, app, name = await _target(request)
    guard_members(request, entity, "configurations", [app.id])  # a locked member refuses
    value = configuration_value(await read_object(request))
    try:
        p = await store.set(served_node(app), name, value)
    except ValueNotConvertible as exc:
        raise ApiError(400, "invalid-request", f"Invalid value for parameter '{name}': {exc}",
                       parameters={"field": "value", "param_name": name, "reason": str(exc),
                                   "fields": [{"field": "data", "message": str(exc)}],
                                   "entity_id": entity.id,
                                   "id": request.match_info["param_name"]}) from None
    except ParameterError as exc:
        params = {"entity_id": entity.id, "param_name": name,
                  "id": request.match_info["param_name"]}
        raise (state.serializer(CONFIGURATIONS).refused(exc, **params)
               or parameter_error(exc, **params)) from None
    return json_response(param_item(state, store, app, p, entity.kind != "apps", entity.id))


async def reset_configuration(request: web.Request) -> web.Response:
    """Reset one parameter to the value first seen for it."""
    _, store, entity, app, name = await _target(request)
    guard_members(request, entity, "configurations", [app.id])  # a locked member refuses
    try:
        await store.reset(served_node(app), name)
    except ParameterError as exc:
        raise parameter_error(exc, entity_id=entity.id, param_name=name) from None
    return web.Response(status=204)


async def reset_all_configurations(request: web.Request) -> web.Response:
    """Reset every parameter of every member node: 204; 207 naming members of other gateways."""
    state = state_of(request)
    entity = resolve_entity(request)
    store = parameter_store(state)
    guard_members(request, entity, "configurations",  # any locked member refuses the reset
                  [app.id for app in local_member_apps(state, entity)])
    outcomes = await per_member(state, entity, lambda app: store.reset_all(served_node(app)))
    _raise_worst(outcomes, entity.id)
    results = []
    for app, result in outcomes:
        entry: dict[str, Any] = {"id": app.id, "node": node_of(app), "gateway": "local"}
        if isinstance(result, BaseException):
            err = parameter_error(result) if isinstance(result, ParameterError) else None
            entry["status"] = err.status if err else 500
            entry["message"] = str(result)
        elif result:
            entry["status"] = 400
            entry["message"] = "the node refused to reset some parameters"
            entry["rejected"] = result
        else:
            entry["status"] = 204
        results.append(entry)
    if not state.serializer(CONFIGURATIONS).local_failures_multistatus:
        _raise_local_failure(entity, outcomes, results)
    fed = federation(state)
    if fed is not None:  # members run by another gateway are not reset from here
        for app in state.cache.entities.member_apps(entity):
            origin = fed.view.app_origin(app.id)
            if origin is not None and not origin.is_local:
                results.append({"id": app.id, "node": origin.node_fqn,
                                "gateway": origin.gateway, "status": 409,
                                "message": f"run by gateway '{origin.gateway}': not reset; "
                                           f"reset it through /apps/{app.id}/configurations"})
    if all(r["status"] == 204 for r in results):
        return web.Response(status=204)
    body = state.serializer(CONFIGURATIONS).reset_report(entity.id, results, partial_fields(outcomes))
    return json_response(body, status=207)


def _raise_local_failure(entity: Entity, outcomes: list[tuple[Entity, Any]],
                         results: list[dict[str, Any]]) -> None:
    """A member of this gateway that was not reset is an error, not a 207 (spec: 207 is
    only for members run by another gateway); `results` tells what was reset."""
    failed = [(app, r) for app, r in outcomes if isinstance(r, BaseException) or r]
    if not failed:
        return
    exceptions = [r for _, r in failed if isinstance(r, BaseException)]
    errors = [parameter_error(e) if isinstance(e, ParameterError) else
              vendor_error(500, "x-vendor-ros2-service-unavailable", str(e), node="")
              for e in exceptions]
    if errors:
        err = max(errors, key=lambda e: (e.status == 500, e.status == 503))
    else:
        app, rejected = failed[0]
        err = ApiError(400, "invalid-request",
                       f"Node {node_of(app)} refused to reset some parameters",
                       parameters={"node": node_of(app), "rejected": rejected})
    not_reset = [r["id"] for r in results if r["status"] != 204]
    err.message = (f"{err.message}; not reset: {', '.join(not_reset)} (the other members of "
                   f"'{entity.id}' were reset)")
    err.parameters = {**(err.parameters or {}), "entity_id": entity.id, "items": results}
    raise err


def register(reg: Registry) -> None:
    """Declare the configuration routes."""
    reg.lists_items("configurations", _local_items)
    ms = {"multi_segment": ("param_name",)}
    reg.entity_routes("GET", "/configurations", list_configurations, response="ListEnvelope",
                      summary="List configurations (node parameters)")
    reg.entity_routes("DELETE", "/configurations", reset_all_configurations,
                      role=Role.CONFIGURATOR, status=204, alternates=(207,),
                      summary="Reset every parameter to its default")
    reg.entity_routes("GET", "/configurations/{param_name}", get_configuration,
                      summary="Read a parameter", **ms)
    reg.entity_routes("PUT", "/configurations/{param_name}", set_configuration,
                      role=Role.CONFIGURATOR, request="Object", summary="Set a parameter", **ms)
    reg.entity_routes("DELETE", "/configurations/{param_name}", reset_configuration,
                      role=Role.CONFIGURATOR, status=204,
                      summary="Reset a parameter to its default", **ms)
