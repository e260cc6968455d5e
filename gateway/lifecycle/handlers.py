"""Lifecycle control of apps and components: start, restart, force-restart, shutdown,
force-shutdown (202)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import ApiError, vendor_error
from ..federation.lifecycle import PeerTransitions, peer_transitions
from ..http.jsonutil import json_response
from ..http.resource_helpers import federation, href, local_member_apps, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..locks.guard import guard_members
from ..model.entities import SINGULAR, Entity
from ..model.roles import Role
from .control import LIFECYCLE, LifecycleControl
from .plans import FORCE_RESTART, FORCE_SHUTDOWN, RESTART, SHUTDOWN, START
from .provider import (
    Busy,
    LifecycleProvider,
    PlanError,
    TransitionRecord,
    Unavailable,
    is_managed,
)

PRECONDITION = "precondition-not-fulfilled"
# transition -> role (spec: start/restart operator; shutdown and force-shutdown configurator)
ROLES = {START: Role.OPERATOR, RESTART: Role.OPERATOR, FORCE_RESTART: Role.OPERATOR,
         SHUTDOWN: Role.CONFIGURATOR, FORCE_SHUTDOWN: Role.CONFIGURATOR}


def node_of(app: Entity) -> str | None:
    """The app's node (a linked app that inherits no runtime resources still has one)."""
    return app.node_fqn or app.bound_fqn


def _managed_apps(state: GatewayState, entity: Entity) -> tuple[list[Entity], list[str]]:
    """(online managed member apps, reasons the others were left out)."""
    graph = state.cache.graph
    managed, skipped = [], []
    for app in local_member_apps(state, entity):  # a fleet peer's apps: its gateway's part
        fqn = node_of(app)
        node = graph.node(fqn) if fqn else None
        if node is None:
            skipped.append(f"{app.id}: offline")
        elif not is_managed(node, fqn or ""):
            skipped.append(f"{app.id}: plain node")
        else:
            managed.append(app)
    return managed, skipped


def _plain_node(state: GatewayState, entity: Entity, reasons: list[str]) -> ApiError:
    what = f"'{node_of(entity)}'" if entity.kind == "apps" else f"component '{entity.id}'"
    detail = ("it offers no lifecycle_msgs GetState/ChangeState services (a plain node), and "
              "this gateway does not control node processes") if entity.kind == "apps" else \
        "none of its apps is an online managed (lifecycle) node"
    return state.wire.errors.feature_absent(
        "lifecycle", f"Lifecycle control is not available for {what}: {detail}",
        entity_id=entity.id, reasons=reasons)


async def _request(prov: LifecycleProvider, app: Entity, transition: str) -> TransitionRecord:
    fqn = node_of(app) or ""
    try:
        return await prov.request(app.id, fqn, transition)
    except (Busy, PlanError) as exc:
        raise ApiError(409, PRECONDITION, f"Cannot {transition} '{fqn}': {exc}",
                       parameters={"entity_id": app.id, "transition": transition}) from None
    except Unavailable as exc:
        raise vendor_error(503, "x-vendor-ros2-node-unavailable",
                           f"'{fqn}' did not report its lifecycle state: {exc}",
                           entity_id=app.id) from None


def handler(transition: str) -> Any:
    """The PUT handler of one transition."""

    async def control(request: web.Request) -> web.Response:
        state = state_of(request)
        entity = resolve_entity(request)
        apps, skipped = _managed_apps(state, entity)
        guard_members(request, entity, "modes", [a.id for a in apps])  # a locked app refuses
        fed = federation(state)
        peers = await peer_transitions(fed, request, entity, transition) \
            if fed is not None and entity.kind == "components" else PeerTransitions()
        skipped += peers.skipped
        if entity.kind == "apps" and not apps and skipped and skipped[0].endswith("offline"):
            fqn = node_of(entity)
            why = f"its node '{fqn}' is not on the ROS graph" if fqn else \
                "no ROS node is linked to it (the app is offline)"
            raise vendor_error(503, "x-vendor-ros2-node-unavailable",
                               f"Cannot {transition} app '{entity.id}': {why}",
                               entity_id=entity.id)
        if not apps and not peers.records:
            raise _plain_node(state, entity, skipped)
        records: list[TransitionRecord] = []
        refused: list[tuple[Entity, ApiError]] = []
        for app in apps:  # a component: each managed app on its own; refusals are reported
            try:
                records.append(await _request(request.app[LIFECYCLE].provider(), app, transition))
            except ApiError as err:
                if entity.kind == "apps":
                    raise
                refused.append((app, err))
        if not records and not peers.records:
            raise refused[0][1]
        statuses = [r.status for r in records] + peers.statuses
        status = "failed" if "failed" in statuses else \
            "inProgress" if "inProgress" in statuses else "completed"
        body: dict[str, Any] = {"id": entity.id, "transition": transition, "status": status,
                                "apps": [r.body() for r in records] + peers.records}
        skipped += [f"{app.id}: {err.message}" for app, err in refused]
        if skipped:
            body[state.xv] = {"skipped": skipped}
        return json_response(body, status=202, headers={"Location": href(f"{entity.path}/status")})

    control.__doc__ = f"Lifecycle {transition} (202; poll the status)"
    return control


def install(app: web.Application, state: GatewayState) -> None:
    """The lifecycle control (its running transitions cancelled when the feature services
    stop, app.feature_services)."""
    state.features.add("lifecycle")
    app[LIFECYCLE] = LifecycleControl(state)  # stopped with the feature services


def register(reg: Registry) -> None:
    """Declare the lifecycle control routes (components and apps)."""
    for transition, role in ROLES.items():
        for kind in ("components", "apps"):
            # spec: lifecycle status operation ids use the singular form (put_app_status_start)
            op_id = f"put_{SINGULAR[kind]}_status_{transition.replace('-', '_')}"
            reg.entity_routes("PUT", f"/status/{transition}", handler(transition), role=role,
                              types=(kind,), status=202, response="LifecycleTransition",
                              feature="lifecycle", summary=f"Lifecycle control: {transition}",
                              extra={"operation_id": op_id})
