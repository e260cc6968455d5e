"""Operations: the services and actions of an entity, and executions of them."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from ..errors import ApiError, invalid_parameter, not_found, vendor_error
from ..http import hot
from ..http.jsonutil import json_body_limit, json_response
from ..http.resource_helpers import envelope, href, list_collection, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..locks.guard import guard_members
from ..model.entities import Entity
from ..model.items import ItemLookupError, MemberItem, resolve
from ..model.roles import Role
from ..process.settings import ProcessSettings
from ..process.statefiles import default_state_dir
from ..push.publishers import service_completed, watch_execution
from ..ros.calls.actions import ActionManager, Execution
from ..ros.calls.callbuild import ServiceTypeBuilds
from ..ros.calls.services import CallError, ServiceCaller
from ..ros.interfaces.interface_paths import SETTING as INTERFACE_PATHS
from ..ros.interfaces.message import (
    UnknownTypeError,
    action_schemas,
    field_type_map,
    import_type,
    message_to_dict,
    service_schemas,
)
from ..ros.settings import RosServiceSettings
from ..wire.bodies import (
    build_message,
    check_type_override,
    envelope_key,
    execution_request,
    read_object,
)
from .listing import OpRef, entity_operations
from .wire import OPERATIONS

# Longest budget a request's own `timeout` may ask for.
MAX_TIMEOUT_S = 3600.0
# A call right after its type was built gets at least this much time (s) of its own.
BUILT_CALL_MIN_S = 1.0
# Capabilities of the execution PUT that exist in SOVD but do not apply to ROS actions.
INAPPLICABLE = ("execute", "freeze", "reset")


def find_operation(state: GatewayState, entity: Entity, op_id: str) -> OpRef:
    """The operation an id addresses (assigned id, or a bare id naming one); 404 otherwise."""
    ops = entity_operations(state, entity)
    for op in ops:  # an assigned id (the common case) needs no member items
        if op.id == op_id:
            return op
    items = [MemberItem(o.member_ids[0], o.path) for o in ops]
    try:
        return ops[resolve(op_id, items, [o.id for o in ops])]
    except ItemLookupError as exc:
        params: dict[str, Any] = {"entity_id": entity.id, "operation_id": op_id}
        if exc.candidates:
            params["candidates"] = exc.candidates
            raise not_found(f"Operation id '{op_id}' is ambiguous on {entity.type} "
                            f"'{entity.id}'; use one of: {', '.join(exc.candidates)}",
                            **params) from None
        raise state.wire.errors.operation_not_found(
            entity.id, op_id, f"Operation '{op_id}' not found on {entity.type} '{entity.id}'"
        ) from None


def _type_info(op: OpRef) -> tuple[dict[str, Any], dict[str, Any]] | None:
    try:
        cls = import_type(op.type)
    except UnknownTypeError:
        return None
    if op.kind == "service":
        parts = {"request": cls.Request, "response": cls.Response}
        schemas = service_schemas(cls)
    else:
        parts = {"goal": cls.Goal, "result": cls.Result, "feedback": cls.Feedback}
        schemas = action_schemas(cls)
    return schemas, {k: field_type_map(v) for k, v in parts.items()}


def operation_item(state: GatewayState, op: OpRef, entity_id: str) -> dict[str, Any]:
    """One operation description (list item; the detail wraps it in `item`)."""
    info = _type_info(op)
    return state.serializer(OPERATIONS).item(op, entity_id, *(info or ()))


def local_items(state: GatewayState, entity: Entity) -> list[dict[str, Any]]:
    """This gateway's operation items of an entity (fresh top-level dicts)."""
    cached = state.cache.body(("operation-items", entity.kind, entity.id), lambda: [
        operation_item(state, op, entity.id) for op in entity_operations(state, entity)])
    return [dict(item) for item in cached]


async def _local_items(state: GatewayState, entity: Entity) -> list[dict[str, Any]]:
    return local_items(state, entity)


async def list_operations(request: web.Request) -> web.Response:
    """Services and actions of an entity (aggregated over member apps and peers)."""
    return await list_collection(request, "operations", local_items)


async def get_operation(request: web.Request) -> web.Response:
    """One operation, wrapped in `item`."""
    state = state_of(request)
    entity = resolve_entity(request)
    op = find_operation(state, entity, request.match_info["op_id"])
    return json_response({"item": operation_item(state, op, entity.id)})


def _actions(state: GatewayState) -> ActionManager:
    return state.actions


def _caller(state: GatewayState) -> ServiceCaller:
    return state.service_caller


def request_timeout(body: dict[str, Any], default: float) -> float:
    """The body's `timeout` (seconds, 0 < t <= MAX_TIMEOUT_S) or the default; 400 when bad."""
    value = body.get("timeout")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
        raise invalid_parameter(f"'timeout' must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]",
                                field="timeout", value=value)
    return float(value)


def call_budget(state: GatewayState) -> float:
    """The budget of a service or action call (setting `service_call_timeout_sec`)."""
    return state.settings.typed(RosServiceSettings.from_settings).service_call_timeout_sec


def state_directory(setting: str) -> str:
    """The gateway's state directory (setting `state_dir`, else the default)."""
    return str(Path(setting).expanduser() if setting else default_state_dir())


async def built_type(state: GatewayState, op: OpRef, missing: str, timeout: float) -> Any:
    """The class of a service type built from its server's description (ros/calls/callbuild.py);
    503 while it builds, 501 naming the reason and the setting when it cannot be built."""
    reason = missing
    if op.kind == "service":
        builds = state.service_type_builds
        if builds is None:
            builds = state.service_type_builds = ServiceTypeBuilds(
                state.bridge, state_directory(
                    state.settings.typed(ProcessSettings.from_settings).state_dir))
            state.bridge.closers.append(builds.close)
        status, why = await builds.ensure(op.type, op.path, timeout)
        if status == "built":
            try:
                return import_type(op.type)
            except UnknownTypeError as exc:
                why = str(exc)
        if status == "building":
            raise vendor_error(
                503, "x-vendor-ros2-type-build-pending",
                f"The gateway is building the service type '{op.type}' from the description "
                f"its server serves; try again shortly", operation_id=op.id, type=op.type)
        reason = f"{missing}; not built from the server's description: {why}"
    raise vendor_error(
        501, "x-vendor-ros2-service-unavailable",
        f"Cannot call {op.path}: the gateway has no {op.kind} type '{op.type}' ({reason}); "
        f"give it the robot's install prefix in the setting '{INTERFACE_PATHS}'",
        operation_id=op.id, type=op.type, setting=INTERFACE_PATHS)


def _build(cls: Any, fields: dict[str, Any], op: OpRef, where: str) -> Any:
    return build_message(cls, fields, where, operation_id=op.id)


def _location(entity: Entity, op: OpRef, exec_id: str) -> str:
    return href(f"{entity.path}/operations/{quote(op.id, safe=':')}/executions/{exec_id}")


def execution_body(state: GatewayState, ex: Execution) -> dict[str, Any]:
    """An execution's status in the wire profile (gateway/operations/wire.py)."""
    return state.serializer(OPERATIONS).execution(ex)


async def start_execution(request: web.Request) -> web.Response:
    """Call a service (200 with its response) or send an action goal (202 with Location)."""
    state = state_of(request)
    entity = resolve_entity(request)
    op = find_operation(state, entity, request.match_info["op_id"])
    guard_members(request, entity, "operations", op.member_ids)  # a locked member refuses
    body = await read_object(request)
    timeout = request_timeout(body, call_budget(state))
    try:
        cls = import_type(op.type)
    except UnknownTypeError as exc:
        began = time.monotonic()
        cls = await built_type(state, op, str(exc), timeout)
        # the call gets what the build left of the budget, at least a second (or the budget)
        timeout = max(timeout - (time.monotonic() - began), min(timeout, BUILT_CALL_MIN_S))
    if op.kind == "service":
        answer = await _call_service(state, op, cls, body, timeout)
        # The next POSTs of this path run the same call before routing (gateway/http/hot.py)
        hot.offer_call(state, request, _hot_call(state, op, cls))
        return answer
    fields, override = execution_request(body, op.kind, field_type_map(cls.Goal))
    check_type_override(override, op.type)
    where = {f"ros2_{op.kind}": op.path}
    wire = state.serializer(OPERATIONS)
    goal = _build(cls.Goal, fields, op, envelope_key(body, op.kind))
    actions = _actions(state)
    try:
        ex = await actions.send_goal((entity.kind, entity.id), op.path, op.path, op.type, goal,
                                     timeout)
    except CallError as exc:
        raise wire.start_error(op.kind, exc, operation_id=op.id, **where) from None
    if ex.rejected:
        refused = wire.goal_rejected(ex, operation_id=op.id, **where)
        if refused is not None:
            raise refused
    watch_execution(state, op.member_ids[0] if op.member_ids else None, ex)  # triggers
    return json_response(execution_body(state, ex), status=202,
                         headers={"Location": _location(entity, op, ex.id)})


async def _call_service(state: GatewayState, op: OpRef, cls: Any, body: dict[str, Any],
                        timeout: float) -> web.Response:
    """Call the service with the request a POST body gives (200 with its response)."""
    fields, override = execution_request(body, "service", field_type_map(cls.Request))
    check_type_override(override, op.type)
    msg = _build(cls.Request, fields, op, envelope_key(body, "service"))
    caller = _caller(state)
    member = op.member_ids[0] if op.member_ids else None
    try:
        response = await caller.call(op.path, op.type, msg, timeout)
    except CallError as exc:
        service_completed(state, member, op.path, False)
        raise state.serializer(OPERATIONS).start_error(op.kind, exc, operation_id=op.id,
                                                ros2_service=op.path) from None
    service_completed(state, member, op.path, True)
    xv = {"ros2_service": op.path, "ros2_type": op.type}
    return json_response({"parameters": message_to_dict(response), state.xv: xv})


def _hot_call(state: GatewayState, op: OpRef, cls: Any) -> hot.Call:
    """start_execution's work on a service POST of one path, for the fast path: it holds
    while the entity set is unchanged (so the entity and the operation resolve alike)."""
    cache = state.cache
    generation = cache.generation

    async def run(request: web.BaseRequest) -> web.Response:
        body = await read_object(request, limit=json_body_limit(state.settings))
        timeout = request_timeout(body, call_budget(state))
        return await _call_service(state, op, cls, body, timeout)

    def call(request: web.BaseRequest) -> hot.Answer | None:
        return run(request) if cache.generation == generation else None

    return call


def _execution(request: web.Request) -> tuple[GatewayState, Entity, OpRef, Execution]:
    state = state_of(request)
    entity = resolve_entity(request)
    exec_id = request.match_info["exec_id"]
    try:
        op = find_operation(state, entity, request.match_info["op_id"])
    except ApiError as exc:  # the reference looks the execution up first
        raise state.wire.errors.execution_of_unknown_operation(exc, entity.id, exec_id) from None
    ex = None
    if op.kind == "action":
        ex = _actions(state).get((entity.kind, entity.id), op.path, exec_id)
    if ex is None:
        raise state.wire.errors.execution_not_found(
            entity.id, op.id, exec_id,
            f"Execution '{exec_id}' not found on operation '{op.id}' of {entity.type} "
            f"'{entity.id}'")
    return state, entity, op, ex


async def list_executions(request: web.Request) -> web.Response:
    """Executions of an operation started on this entity (services keep none)."""
    state = state_of(request)
    entity = resolve_entity(request)
    op = find_operation(state, entity, request.match_info["op_id"])
    items = []
    if op.kind == "action":
        for ex in _actions(state).executions((entity.kind, entity.id), op.path):
            items.append({"id": ex.id, "status": ex.status,
                          "href": _location(entity, op, ex.id)})
    return json_response(envelope(state, items, entity.id))


async def get_execution(request: web.Request) -> web.Response:
    """Status of one execution."""
    state, _, _, ex = _execution(request)
    return json_response(execution_body(state, ex))


async def control_execution(request: web.Request) -> web.Response:
    """`capability: stop` cancels the goal; execute, freeze and reset do not apply (400)."""
    state, entity, op, ex = _execution(request)
    guard_members(request, entity, "operations", op.member_ids)  # a locked member refuses
    body = await read_object(request)
    capability = body.get("capability")
    if not isinstance(capability, str) or not capability:
        raise invalid_parameter("'capability' is required; only 'stop' is supported",
                                field="capability",
                                fields=[{"field": "capability",
                                         "message": "missing required field"}])
    if capability != "stop":
        why = ("does not apply to a running execution" if capability in INAPPLICABLE
               else "is unknown")
        raise state.serializer(OPERATIONS).capability_refused(capability, why)
    timeout = request_timeout(body, call_budget(state))
    try:
        await _actions(state).cancel(ex, timeout)
    except CallError as exc:
        raise state.serializer(OPERATIONS).call_error(exc, ros2_action=op.path) from None
    return json_response(execution_body(state, ex), status=202,
                         headers={"Location": _location(entity, op, ex.id)})


async def delete_execution(request: web.Request) -> web.Response:
    """Cancel the goal when it runs; the execution is removed (spec) or kept readable."""
    state, entity, op, ex = _execution(request)
    guard_members(request, entity, "operations", op.member_ids)  # a locked member refuses
    actions = _actions(state)
    timeout = call_budget(state)
    try:
        if state.serializer(OPERATIONS).keep_after_delete:
            await actions.cancel(ex, timeout)
        else:
            await actions.remove(ex, timeout)
    except CallError as exc:
        raise state.serializer(OPERATIONS).call_error(exc, ros2_action=op.path) from None
    return web.Response(status=204)


def register(reg: Registry) -> None:
    """Declare the operation routes (execution routes first: op ids may span '/')."""
    reg.lists_items("operations", _local_items)
    ms = {"multi_segment": ("op_id",)}
    reg.entity_routes("GET", "/operations", list_operations, response="ListEnvelope",
                      summary="List operations (services and actions)")
    reg.entity_routes("POST", "/operations/{op_id}/executions", start_execution,
                      role=Role.OPERATOR, status=200, alternates=(202,), request="Object",
                      summary="Execute an operation", **ms)
    reg.entity_routes("GET", "/operations/{op_id}/executions", list_executions,
                      response="ListEnvelope", summary="List executions of an operation", **ms)
    reg.entity_routes("GET", "/operations/{op_id}/executions/{exec_id}", get_execution,
                      summary="Execution status", **ms)
    reg.entity_routes("PUT", "/operations/{op_id}/executions/{exec_id}", control_execution,
                      role=Role.OPERATOR, status=202, request="Object",
                      summary="Control an execution (capability stop)", **ms)
    reg.entity_routes("DELETE", "/operations/{op_id}/executions/{exec_id}", delete_execution,
                      role=Role.OPERATOR, status=204, summary="Cancel and remove an execution",
                      **ms)
    reg.entity_routes("GET", "/operations/{op_id}", get_operation,
                      summary="Describe an operation", **ms)
