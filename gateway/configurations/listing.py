"""An entity's parameters over its member nodes, and the per-member helpers under them.

Read by the configuration handlers and by cyclic subscriptions (their configurations
snapshot).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import ApiError
from ..http.resource_helpers import local_member_apps
from ..http.state import GatewayState
from ..model.entities import Entity
from ..ros.calls.parameters import NodeUnavailable, Param, ParameterStore
from .wire import CONFIGURATIONS


def parameter_store(state: GatewayState) -> ParameterStore:
    """The ROS side's parameter store; 503 while the ROS connection is not running."""
    store = state.parameters
    if store is None:
        raise ApiError(503, "service-unavailable", "The ROS connection is not running")
    return store


def node_of(app: Entity) -> str | None:
    """The app's node: a linked manifest app that does not inherit the node's topics and
    services (`inherit_runtime_resources: false`) still has its parameters."""
    return app.node_fqn or app.bound_fqn


def served_node(app: Entity) -> str:
    """The node of an app that per_member runs work for, or that the handlers found serving
    parameters (it has one)."""
    fqn = node_of(app)
    assert fqn is not None  # has_parameter_services found the node
    return fqn


def has_parameter_services(state: GatewayState, app: Entity) -> bool | None:
    """True/False whether the app's node serves parameters; None when the node is not up."""
    fqn = node_of(app)
    node = state.cache.graph.node(fqn) if fqn else None
    if node is None or not app.is_online:
        return None
    return any(name == f"{node.fqn}/get_parameters" for name, _ in node.services)


def param_item(state: GatewayState, store: ParameterStore, app: Entity, p: Param,
               qualified: bool, entity_id: str | None = None) -> dict[str, Any]:
    """One configuration item in the wire profile (gateway/configurations/wire.py)."""
    default = store.default_of(p.node, p.name)
    return state.serializer(CONFIGURATIONS).item(
        p, app, entity_id or app.id, qualified, default[1] if default is not None else None)


async def per_member(state: GatewayState, entity: Entity, work: Any
                     ) -> list[tuple[Entity, Any]]:
    """Run work(app) for every member app serving parameters; exceptions are returned."""
    apps = local_member_apps(state, entity)
    jobs: list[tuple[Entity, Any]] = []
    for app in apps:
        served = has_parameter_services(state, app)
        if served is False:
            continue
        if served is None:
            jobs.append((app, NodeUnavailable(node_of(app) or app.id,
                                              f"node of app '{app.id}' is not running")))
            continue
        jobs.append((app, asyncio.ensure_future(work(app))))
    futures = [j for _, j in jobs if isinstance(j, asyncio.Future)]
    if futures:
        await asyncio.gather(*futures, return_exceptions=True)
    out = []
    for app, job in jobs:
        if isinstance(job, asyncio.Future):
            exc = job.exception()
            out.append((app, exc if exc is not None else job.result()))
        else:
            out.append((app, job))
    return out


def partial_fields(outcomes: list[tuple[Entity, Any]]) -> dict[str, Any]:
    """x-vendor partial fields for member failures (empty when every member answered)."""
    unavailable = [node_of(app) or app.id for app, r in outcomes
                   if isinstance(r, NodeUnavailable)]
    failed = [node_of(app) or app.id for app, r in outcomes
              if isinstance(r, BaseException) and not isinstance(r, NodeUnavailable)]
    extra: dict[str, Any] = {}
    if unavailable or failed:
        extra["partial"] = True
        if unavailable:
            extra["unavailable_nodes"] = unavailable
        if failed:
            extra["failed_nodes"] = failed
    return extra


async def local_items(state: GatewayState, entity: Entity
                      ) -> tuple[list[dict[str, Any]], dict[str, Any], list[tuple[Entity, Any]]]:
    """(items, partial fields, per-member outcomes) of this gateway's parameters."""
    store = parameter_store(state)
    outcomes = await per_member(state, entity, lambda app: store.params(served_node(app)))
    qualified = entity.kind != "apps"
    items = [param_item(state, store, app, p, qualified, entity.id)
             for app, result in outcomes if not isinstance(result, BaseException)
             for p in result]
    return items, partial_fields(outcomes), outcomes
