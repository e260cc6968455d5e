"""Entity routes of plugin-owned entities: answered by the owning plugin's providers."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..errors import bad_request, not_found
from ..http.jsonutil import json_response, read_json_body
from ..http.resource_helpers import envelope, resolve_entity
from ..http.routes import Handler, Registry, entity_type_of
from ..http.state import state_of
from ..model.entities import KINDS
from . import entity_faults, entity_lifecycle, entity_logs, entity_scripts
from .api import DATA, FAULTS, INTROSPECTION, LIFECYCLE, LOGS, OPERATIONS, SCRIPTS
from .manager import PluginManager
from .served import Served, items_of

_S = "/scripts/{script_id}"
_X = _S + "/executions/{execution_id}"
# (method, path suffix after the entity) -> (provider kind, action)
ACTIONS: dict[tuple[str, str], tuple[str, str]] = {
    ("GET", "/data"): (DATA, "list"),
    ("GET", "/data/{data_id}"): (DATA, "read"),
    ("PUT", "/data/{data_id}"): (DATA, "write"),
    ("GET", "/operations"): (OPERATIONS, "list"),
    ("GET", "/operations/{op_id}"): (OPERATIONS, "detail"),
    ("POST", "/operations/{op_id}/executions"): (OPERATIONS, "execute"),
    ("GET", "/faults"): (FAULTS, "list"),
    ("DELETE", "/faults"): (FAULTS, "clear_all"),
    ("GET", "/faults/{fault_code}"): (FAULTS, "detail"),
    ("DELETE", "/faults/{fault_code}"): (FAULTS, "clear"),
    ("GET", "/logs"): (LOGS, "list"),
    ("GET", "/scripts"): (SCRIPTS, "list"),
    ("POST", "/scripts"): (SCRIPTS, "upload"),
    ("GET", _S): (SCRIPTS, "detail"),
    ("DELETE", _S): (SCRIPTS, "delete"),
    ("POST", _S + "/executions"): (SCRIPTS, "execute"),
    ("GET", _S + "/executions"): (SCRIPTS, "executions"),
    ("GET", _X): (SCRIPTS, "execution"),
    ("PUT", _X): (SCRIPTS, "control"),
    ("DELETE", _X): (SCRIPTS, "delete_execution"),
    ("GET", "/status"): (LIFECYCLE, "status"),
    **{("PUT", f"/status/{t}"): (LIFECYCLE, t) for t in entity_lifecycle.TRANSITIONS},
}


def install(reg: Registry, manager: PluginManager) -> None:
    """Wrap the entity routes so plugin entities reach their plugin's providers."""
    if not any(INTROSPECTION in p.providers for p in manager.loaded):
        return  # only introspected entities have an owning plugin
    for i, route in enumerate(reg.routes):
        parts = route.path.split("/", 3)  # "", type, {id}, rest
        if len(parts) < 4 or parts[1] not in KINDS or route.extra.get("stub"):
            continue
        action = ACTIONS.get((route.method, "/" + parts[3]))
        if action is not None:
            reg.routes[i] = dataclasses.replace(
                route, handler=_wrap(route.handler, manager, *action))


def _wrap(original: Handler, manager: PluginManager, kind: str, action: str) -> Handler:
    serve = SERVERS[kind]

    async def handler(request: web.Request) -> web.StreamResponse:
        if manager.owners and entity_type_of(request) in manager.owners:
            entity = resolve_entity(request)
            owner = manager.owner_of(entity)
            if owner is not None:
                served = Served(request, state_of(request), manager, owner, entity, kind,
                                action)
                answer = await serve(served)
                if answer is not None:
                    return answer
        return await original(request)

    handler.__doc__ = original.__doc__
    handler.__name__ = getattr(original, "__name__", "handler")
    return handler


async def _serve(s: Served) -> web.StreamResponse:
    """Data and operations of a plugin entity."""
    request, state, owner, kind, action, entity_id = (s.request, s.state, s.owner, s.kind,
                                                      s.action, s.eid)
    xv = state.xv
    provider = owner.providers.get(kind)
    call = s.call
    if provider is None:
        if action == "list":
            return json_response(envelope(state, [], entity_id))
        raise not_found(f"{kind} not offered by plugin entity '{entity_id}'",
                        entity_id=entity_id)
    if kind == DATA:
        if action == "list":
            items = await call(provider.list_data, entity_id, entity_id=entity_id)
            out = [{"category": "currentData", **i, xv: {"member_ids": [entity_id],
                                                         "source": owner.name}}
                   for i in _items(items)]
            return json_response(envelope(state, out, entity_id))
        data_id = request.match_info["data_id"]
        if action == "read":
            value = await call(provider.read_data, entity_id, data_id, entity_id=entity_id)
            return json_response({"id": data_id, "data": value, xv: {
                "entity_id": entity_id, "timestamp": time.time_ns(), "status": "data"}})
        body = await read_json_body(request)
        result = await call(provider.write_data, entity_id, data_id, body, entity_id=entity_id)
        return json_response({"id": data_id, "data": body if result is None else result, xv: {
            "entity_id": entity_id, "timestamp": time.time_ns(), "status": "published"}})
    items = _items(await call(provider.list_operations, entity_id, entity_id=entity_id))
    ops = [{"proximity_proof_required": False, "asynchronous_execution": False, **i}
           for i in items]
    if action == "list":
        return json_response(envelope(state, ops, entity_id))
    op_id = request.match_info["op_id"]
    op = next((o for o in ops if o["id"] == op_id), None)
    if op is None:
        raise not_found(f"Operation '{op_id}' not found on {entity_id}", entity_id=entity_id,
                        op_id=op_id)
    if action == "detail":
        return json_response({"item": op})
    body = await read_json_body(request) if request.can_read_body else {}
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object", entity_id=entity_id)
    params = body.get("parameters", {})
    result = await call(provider.execute, entity_id, op_id, params, entity_id=entity_id)
    return json_response({"id": op_id, "status": "completed", "parameters": result})


_items = items_of

SERVERS: dict[str, Callable[[Served], Awaitable[web.StreamResponse | None]]] = {
    DATA: _serve, OPERATIONS: _serve, FAULTS: entity_faults.serve, LOGS: entity_logs.serve,
    SCRIPTS: entity_scripts.serve, LIFECYCLE: entity_lifecycle.serve,
}
