"""Entity status (readiness) of apps and components."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..http.jsonutil import json_response
from ..http.resource_helpers import resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..lifecycle.control import LIFECYCLE  # the last control request, while polling it
from ..lifecycle.plans import TRANSITIONS
from ..model.entities import Entity
from ..ros.calls.services import CallError
from ..ros.settings import RosServiceSettings

GET_STATE_TYPE = "lifecycle_msgs/srv/GetState"
ACTIVE = 3  # lifecycle_msgs/msg/State PRIMARY_STATE_ACTIVE


def readiness(online: bool, lifecycle_state: int | None) -> str:
    """ready when the node is up and, if it is a lifecycle node, active; notReady otherwise."""
    if not online:
        return "notReady"
    if lifecycle_state is not None and lifecycle_state != ACTIVE:
        return "notReady"
    return "ready"


def _node(app: Entity) -> str | None:
    # a linked manifest app that does not inherit the node's resources still has its node
    return app.node_fqn or app.bound_fqn


def _online(state: GatewayState, app: Entity) -> bool:
    if app.id not in state.cache.local.apps:  # a fleet peer's app: as its gateway reports it
        return app.is_online
    fqn = _node(app)
    return bool(app.is_online and fqn and state.cache.graph.node(fqn))


async def _lifecycle(state: GatewayState, app: Entity) -> dict[str, Any] | None:
    """The lifecycle state of the app's node, or None when it is not a lifecycle node."""
    node = state.cache.graph.node(_node(app) or "") if _node(app) else None
    service = f"{_node(app)}/get_state"
    if node is None or (service, GET_STATE_TYPE) not in node.services:
        return None
    from lifecycle_msgs.srv import GetState  # noqa: PLC0415 - ROS types load on first use

    caller = state.service_caller
    budget = state.settings.typed(RosServiceSettings.from_settings).parameter_service_timeout_sec
    try:
        response = await caller.call(service, GET_STATE_TYPE, GetState.Request(), budget)
    except CallError as exc:
        return {"state": "unknown", "error": str(exc)}
    return {"state": response.current_state.label, "state_id": int(response.current_state.id)}


async def app_status(request: web.Request) -> web.Response:
    """Readiness of an app: its node is on the graph (and active, for a lifecycle node)."""
    state = state_of(request)
    entity = resolve_entity(request)
    online = _online(state, entity)
    xv: dict[str, Any] = {"is_online": online, "ros2": {"node": _node(entity)}}
    lifecycle = await _lifecycle(state, entity) if online else None
    state_id: int | None = None
    if lifecycle is not None:
        xv["lifecycle"] = lifecycle
        state_id = lifecycle.get("state_id", -1)
    control = request.app.get(LIFECYCLE)
    transition = control.latest(entity.id) if control is not None else None
    if transition is not None:
        xv.setdefault("lifecycle", {})["transition"] = transition
    body: dict[str, Any] = {"id": entity.id, "status": readiness(online, state_id)}
    if lifecycle is not None:  # a managed node: the transitions the built-in provider offers
        for name in TRANSITIONS:
            body[name] = f"/api/v1{entity.path}/status/{name}"
    body[state.xv] = xv
    return json_response(body)


async def component_status(request: web.Request) -> web.Response:
    """Readiness of a component: notReady when all its hosted apps are offline."""
    state = state_of(request)
    entity = resolve_entity(request)
    apps = state.cache.entities.member_apps(entity)
    online = [a.id for a in apps if _online(state, a)]
    offline = [a.id for a in apps if a.id not in online]
    xv: dict[str, Any] = {"apps_total": len(apps), "apps_online": len(online)}
    if offline:
        xv["offline_apps"] = offline
    body = {"id": entity.id, "status": readiness(bool(online), None), state.xv: xv}
    return json_response(body)


def register(reg: Registry) -> None:
    """Declare the status routes (lifecycle control stays 501 until a provider exists)."""
    reg.entity_routes("GET", "/status", app_status, types=("apps",),
                      summary="Readiness of an app", extra={"operation_id": "get_app_status"})
    reg.entity_routes("GET", "/status", component_status, types=("components",),
                      summary="Readiness of a component",
                      extra={"operation_id": "get_component_status"})
