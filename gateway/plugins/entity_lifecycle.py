"""Lifecycle of plugin-owned entities: the plugin's lifecycle provider, or 501 without one."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import ApiError
from ..http.jsonutil import json_response
from ..http.resource_helpers import href
from .api import LIFECYCLE
from .served import Served

# The transitions the route table serves (a provider advertising others gets no link).
TRANSITIONS = ("start", "restart", "force-restart", "shutdown", "force-shutdown")
STATUSES = ("ready", "notReady")


def status_body(path: str, answer: Any) -> dict[str, Any]:
    """The provider's status with each advertised transition as a link; ValueError if bad."""
    if not isinstance(answer, dict) or answer.get("status") not in STATUSES:
        raise ValueError(f"the provider's status must be an object with status ready or "
                         f"notReady, got {answer!r}")
    body: dict[str, Any] = {"status": answer["status"]}
    for name in TRANSITIONS:
        if answer.get(name):
            body[name] = href(f"{path}/status/{name}")
    return body


def _default_status(s: Served) -> dict[str, Any]:
    """Without a provider: an app is ready when online; a component unless all apps are off."""
    e = s.entity
    if e.kind == "apps":
        ready = bool(e.is_online)
    else:
        apps = s.state.cache.entities.member_apps(e)
        ready = not apps or any(a.is_online for a in apps)
    return {"status": "ready" if ready else "notReady"}


async def serve(s: Served) -> web.StreamResponse:
    """GET .../status and PUT .../status/{transition} of a plugin entity."""
    provider = s.provider(LIFECYCLE)
    xv = {"source": s.owner.name}
    if s.action == "status":
        if provider is None:
            body = _default_status(s)
        else:
            answer = await s.call(provider.status, s.eid, entity_id=s.eid)
            try:
                body = status_body(s.entity.path, answer)
            except ValueError as exc:
                raise ApiError(500, "vendor-error", f"Plugin '{s.owner.name}': {exc}",
                               vendor_code="x-vendor-plugin-error",
                               parameters={"entity_id": s.eid}) from None
        return json_response({"id": s.eid, **body, s.state.xv: xv})
    if provider is None:
        raise s.state.wire.errors.feature_absent(
            "lifecycle", f"{s.entity.type} '{s.eid}' of plugin '{s.owner.name}' offers no "
            "lifecycle provider", entity_id=s.eid)
    await s.call(provider.request_transition, s.eid, s.action, entity_id=s.eid)
    return web.Response(status=202, headers={"Location": href(f"{s.entity.path}/status")})
