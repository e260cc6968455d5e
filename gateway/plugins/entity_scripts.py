"""Scripts of plugin-owned entities: served by the plugin's script provider.

Uploading and running one runs code like the gateway's own scripts, so the same gates apply:
anonymous callers only with scripts.allow_anonymous, uploads only with scripts.allow_uploads.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ..errors import ApiError, bad_request, invalid_parameter, not_found
from ..http.jsonutil import json_response
from ..http.resource_helpers import envelope, href
from ..scripts.gates import read_upload, refuse_anonymous, upload_limit
from ..scripts.wire import SCRIPTS as SCRIPT_WIRE
from .api import SCRIPTS
from .served import Served, compact, items_of

EXECUTION_TYPES = ("now", "on_restart", "now_and_on_restart", "once_on_restart")
ACTIONS = ("stop", "forced_termination")


def _vendor(status: int, code: str, message: str, **params: Any) -> ApiError:
    return ApiError(status, "vendor-error", message, vendor_code=code, parameters=params)


async def _json(request: web.Request) -> dict[str, Any]:
    raw = await request.read() if request.can_read_body else b""
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise invalid_parameter("The request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise invalid_parameter("The request body must be a JSON object")
    return body


def _script(s: Served, item: dict[str, Any]) -> dict[str, Any]:
    body = {"managed": True, "name": item["id"], "description": "", **item}
    body["href"] = href(f"{s.entity.path}/scripts/{item['id']}")
    return compact(body)


def _execution(s: Served, script_id: str, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise _vendor(500, "x-vendor-plugin-error", f"Plugin '{s.owner.name}' answered no "
                      f"execution record for script '{script_id}'", entity_id=s.eid)
    return compact(dict(record))


async def _find(s: Served, provider: Any, script_id: str) -> dict[str, Any]:
    if hasattr(provider, "get_script"):
        item = await s.call(provider.get_script, s.eid, script_id, entity_id=s.eid)
        found = dict(item) if isinstance(item, dict) else None
    else:
        found = next((i for i in items_of(await s.call(provider.list_scripts, s.eid,
                                                       entity_id=s.eid))
                      if i["id"] == script_id), None)
    if found is None:
        raise not_found(f"Script '{script_id}' not found on {s.entity.type} '{s.eid}'",
                        entity_id=s.eid, script_id=script_id)
    found.setdefault("id", script_id)
    return found


async def serve(s: Served) -> web.StreamResponse | None:
    """Every script route of a plugin entity (None: the plugin offers no scripts)."""
    provider = s.provider(SCRIPTS)
    if provider is None:
        return None
    eid, call, info = s.eid, s.call, s.request.match_info
    if s.action == "list":
        items = items_of(await call(provider.list_scripts, eid, entity_id=eid))
        return json_response(envelope(s.state, [_script(s, i) for i in items], eid))
    if s.action == "upload":
        refuse_anonymous(s.request, s.state)
        if not hasattr(provider, "upload_script"):
            raise bad_request(f"Plugin '{s.owner.name}' does not accept script uploads for "
                              f"{s.entity.type} '{eid}'", entity_id=eid)

        filename, content, meta = await read_upload(s.request, upload_limit(s.state))
        item = await call(provider.upload_script, eid, filename, content, meta, entity_id=eid)
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise _vendor(500, "x-vendor-plugin-error", "The plugin answered no script id",
                          entity_id=eid)
        body = _script(s, {"managed": False, **item})
        return json_response(body, status=201, headers={"Location": body["href"]})
    script_id = info["script_id"]
    if s.action == "detail":
        return json_response(_script(s, await _find(s, provider, script_id)))
    if s.action == "delete":
        if not hasattr(provider, "delete_script"):
            raise s.state.serializer(SCRIPT_WIRE).error(
                409, "script-managed", f"Script '{script_id}' is managed by plugin "
                f"'{s.owner.name}' and cannot be deleted", script_id=script_id)
        await call(provider.delete_script, eid, script_id, entity_id=eid)
        return web.Response(status=204)
    if s.action == "execute":
        refuse_anonymous(s.request, s.state)
        body = await _json(s.request)
        kind = body.get("execution_type")
        if kind not in EXECUTION_TYPES:
            raise invalid_parameter(f"execution_type is required: one of "
                                    f"{', '.join(EXECUTION_TYPES)}", parameter="execution_type",
                                    value=kind)
        if not isinstance(body.get("parameters", {}), dict):
            raise invalid_parameter("parameters must be a JSON object", parameter="parameters")
        await _find(s, provider, script_id)
        record = _execution(s, script_id, await call(provider.execute_script, eid, script_id,
                                                     body, entity_id=eid))
        location = href(f"{s.entity.path}/scripts/{script_id}/executions/{record['id']}")
        return json_response(record, status=202, headers={"Location": location})
    if s.action == "executions":
        found = await call(provider.list_executions, eid, script_id, entity_id=eid) \
            if hasattr(provider, "list_executions") else []
        return json_response({"items": [compact(i) for i in items_of(found)]})
    execution_id = info["execution_id"]
    if s.action == "execution":
        record = await call(provider.get_execution, eid, script_id, execution_id, entity_id=eid)
        if record is None:
            raise not_found(f"Execution '{execution_id}' not found on script '{script_id}'",
                            entity_id=eid, execution_id=execution_id)
        return json_response(_execution(s, script_id, record))
    if s.action == "control":
        action = (await _json(s.request)).get("action")
        if action not in ACTIONS:
            raise invalid_parameter("action must be stop or forced_termination",
                                    parameter="action", value=action)
        record = await call(provider.control_execution, eid, script_id, execution_id, action,
                            entity_id=eid)
        return json_response(_execution(s, script_id, record), status=202,
                             headers={"Location": s.request.path.rstrip("/")})
    if not hasattr(provider, "delete_execution"):
        raise bad_request(f"Plugin '{s.owner.name}' keeps its executions; they cannot be "
                          "deleted", entity_id=eid, execution_id=execution_id)
    await call(provider.delete_execution, eid, script_id, execution_id, entity_id=eid)
    return web.Response(status=204)
