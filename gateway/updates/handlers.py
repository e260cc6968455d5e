"""Software updates (server-scoped): registration, prepare/execute/automated, status."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..http.jsonutil import json_response, read_json_body
from ..http.routes import API_PREFIX, Handler, Registry
from ..http.state import state_of
from ..model.roles import Role
from . import machine
from .feature import UPDATES
from .manager import UpdateManager


def _manager(request: web.Request) -> UpdateManager:
    manager = request.app[UPDATES].manager
    if manager is None:
        raise state_of(request).wire.errors.feature_absent(
            "updates-backend", "Load an update provider plugin (setting plugins) and keep "
            "updates.enabled")
    return manager


async def list_updates(request: web.Request) -> web.Response:
    """Registered update package ids (filters: origin, target-version)."""
    manager = _manager(request)
    filters = {k: request.query[q] for k, q in (("origin", "origin"),
                                                ("target_version", "target-version"))
               if q in request.query}
    return json_response({"items": await manager.list(filters)})


async def register_update(request: web.Request) -> web.Response:
    """Register an update package."""
    manager = _manager(request)
    uid = await manager.register(await read_json_body(request))
    return json_response({"id": uid}, status=201,
                         headers={"Location": f"{API_PREFIX}/updates/{uid}"})


async def get_update(request: web.Request) -> web.Response:
    """The registered metadata of a package."""
    return json_response(await _manager(request).get(request.match_info["update_id"]))


async def delete_update(request: web.Request) -> web.Response:
    """Delete a package (409 while an operation runs)."""
    await _manager(request).delete(request.match_info["update_id"])
    return web.Response(status=204)


async def update_status(request: web.Request) -> web.Response:
    """Status, progress and phase of a package."""
    state = state_of(request)
    current = await _manager(request).status(request.match_info["update_id"])
    return json_response(current.body(state.xv))


def _operation(op: str) -> Handler:
    async def operate(request: web.Request) -> web.Response:
        uid = request.match_info["update_id"]
        await _manager(request).start(uid, op)
        return web.Response(status=202,
                            headers={"Location": f"{API_PREFIX}/updates/{uid}/status"})

    operate.__doc__ = {"prepare": "Prepare a package (verify, unpack into staging)",
                       "execute": "Execute a prepared package (swap it into place)",
                       "automated": "Prepare then execute in one step"}[op]
    operate.__name__ = f"{op}_update"
    return operate


def register(reg: Registry) -> None:
    """Declare the update routes (501 on each while no provider is loaded)."""
    kw: dict[str, Any] = {"tag": "updates", "feature": "updates"}
    reg.add("GET", "/updates", list_updates, **kw)
    reg.add("POST", "/updates", register_update, role=Role.CONFIGURATOR, status=201, **kw)
    reg.add("GET", "/updates/{update_id}", get_update, **kw)
    reg.add("DELETE", "/updates/{update_id}", delete_update, role=Role.CONFIGURATOR,
            status=204, **kw)
    for op in (machine.PREPARE, machine.EXECUTE, machine.AUTOMATED):
        reg.add("PUT", f"/updates/{{update_id}}/{op}", _operation(op), role=Role.CONFIGURATOR,
                status=202, **kw)
    reg.add("GET", "/updates/{update_id}/status", update_status, **kw)
