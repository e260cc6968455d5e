"""Scripts on components and apps: catalog, uploads, executions (start, stop, kill, delete)."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from aiohttp import web

from ..discovery.keys import DISCOVERY
from ..errors import ApiError, invalid_parameter, not_found
from ..http.jsonutil import json_response
from ..http.resource_helpers import envelope, href, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..model.entities import Entity
from ..model.roles import Role
from ..ros.settings import RosSettings
from ..schemacheck.safeschema import problems_off_loop
from ..settings.secretfiles import forbid_inspection
from .catalog import (
    FORMATS,
    ROOT_WARNING,
    Script,
    ScriptError,
    anonymous_callers,
    check_schema,
    command,
    grant,
    run_env,
)
from .childenv import child_environment, ros_environment
from .gates import read_upload, refuse_anonymous, upload_limit
from .runner import FORCED, STOP, CapacityReached, Execution, NotRunning
from .service import SCRIPT_SERVICE, ScriptService
from .wire import SCRIPTS

log = logging.getLogger(__name__)

CA = ("components", "apps")
EXECUTION_TYPES = ("now", "on_restart", "now_and_on_restart", "once_on_restart")


def service(request: web.Request) -> ScriptService:
    """The script service; 501 without a backend."""
    svc = request.app[SCRIPT_SERVICE]
    if not svc.enabled:
        raise state_of(request).wire.errors.feature_absent(
            "scripts", "Set scripts.scripts_dir to a directory of managed scripts")
    return svc


def _context(request: web.Request) -> tuple[GatewayState, ScriptService, Entity]:
    state = state_of(request)
    svc = service(request)
    return state, svc, resolve_entity(request)


def _script_body(entity: Entity, sc: Script) -> dict[str, Any]:
    body = sc.describe()
    body["href"] = href(f"{entity.path}/scripts/{sc.id}")
    return body


def _vendor(request: web.Request, status: int, code: str, message: str,
            **params: Any) -> ApiError:
    return state_of(request).serializer(SCRIPTS).error(status, code, message, **params)


async def list_scripts(request: web.Request) -> web.Response:
    """Scripts offered on the entity."""
    state, svc, entity = _context(request)
    items = [_script_body(entity, sc) for sc in svc.scripts_of(entity)]
    return json_response(envelope(state, items, entity.id))


async def get_script(request: web.Request) -> web.Response:
    """One script's metadata."""
    _state, svc, entity = _context(request)
    return json_response(_script_body(entity, svc.script(entity,
                                                         request.match_info["script_id"])))


async def upload(request: web.Request) -> web.Response:
    """Upload a script (.sh, .bash, .py) to the entity (201)."""
    state, svc, entity = _context(request)
    refuse_anonymous(request, state)
    filename, content, meta = await read_upload(request, upload_limit(state))
    if Path(filename).suffix not in FORMATS:
        raise invalid_parameter(f"Script file {filename!r} must end in .sh, .bash or .py",
                                filename=filename)
    loop = asyncio.get_running_loop()  # schema checks and disk writes off the event loop
    if meta.get("parameters_schema") is not None:
        try:
            await loop.run_in_executor(None, check_schema, meta["parameters_schema"])
        except ScriptError as exc:
            raise invalid_parameter(str(exc), parameter="parameters_schema") from None
    sc = await loop.run_in_executor(None, svc.uploads.save, entity.kind, entity.id, filename,
                                    content, meta)
    svc.uploaded[sc.id] = sc
    location = href(f"{entity.path}/scripts/{sc.id}")
    return json_response({"id": sc.id, "name": sc.name}, status=201,
                         headers={"Location": location})


def _active_runs(svc: ScriptService, entity: Entity, script_id: str) -> list[Execution]:
    return [e for e in svc.runner.executions.values()
            if e.active and e.script_id == script_id and e.entity_id == entity.id
            and e.kind == entity.kind]


async def delete_script(request: web.Request) -> web.Response:
    """Delete an uploaded script (204); managed or running scripts answer 409."""
    _state, svc, entity = _context(request)
    sc = svc.script(entity, request.match_info["script_id"])
    if sc.managed:
        raise _vendor(request, 409, "script-managed", f"Script '{sc.id}' is managed (predefined) and "
                      "cannot be deleted", script_id=sc.id)
    if _active_runs(svc, entity, sc.id):
        raise _vendor(request, 409, "script-running", f"Script '{sc.id}' has a running execution; stop "
                      "it first", script_id=sc.id)
    svc.uploaded.pop(sc.id, None)
    await asyncio.get_running_loop().run_in_executor(None, svc.uploads.delete, sc)
    return web.Response(status=204)


async def start_execution(request: web.Request) -> web.Response:
    """Run the script now (202 with Location); 429 past the concurrency cap."""
    state, svc, entity = _context(request)
    sc = svc.script(entity, request.match_info["script_id"])
    refuse_anonymous(request, state)
    try:
        body = await request.json() if request.can_read_body else {}
    except ValueError:
        raise invalid_parameter("The request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise invalid_parameter("The request body must be a JSON object")
    kind = body.get("execution_type")
    if kind not in EXECUTION_TYPES:
        raise invalid_parameter("execution_type is required: now (on_restart, "
                                "now_and_on_restart and once_on_restart need a plugin backend)",
                                parameter="execution_type", value=kind)
    if kind != "now":
        raise invalid_parameter(f"execution_type '{kind}' needs a plugin backend; this "
                                "gateway runs scripts now only", parameter="execution_type",
                                value=kind)
    parameters = body.get("parameters", {})
    if not isinstance(parameters, dict):
        raise invalid_parameter("parameters must be a JSON object", parameter="parameters")
    problems = await problems_off_loop(sc.parameters_schema, parameters)
    if problems:
        raise invalid_parameter("parameters do not match the script's parameters_schema",
                                parameter="parameters", details=problems)
    timeout = sc.timeout_sec or svc.settings.default_timeout_s
    runner = svc.runner
    exec_id = runner.new_id()
    user = svc.run_as
    if user.gid is not None and not sc.managed:  # made private again at each start
        try:
            await asyncio.get_running_loop().run_in_executor(None, grant, sc, user.gid)
        except (OSError, ScriptError) as exc:  # the run then fails and its record says why
            log.warning("script %s: cannot give the run user access: %s", sc.id, exc)
    domain_id = state.settings.typed(RosSettings.from_settings).domain_id
    try:
        record = await runner.start(
            sc.id, entity.kind, entity.id,
            [*user.prefix, *command(sc, parameters, relative=user.gid is not None)],
            run_env({**child_environment(), **ros_environment(domain_id),
                     **user.env}, sc, parameters, entity.kind,
                    entity.id, exec_id),
            timeout, cwd=str(sc.path.parent), execution_id=exec_id)
    except CapacityReached as exc:
        raise _vendor(request, 429, "script-concurrency-limit", str(exc),
                      max_concurrent_executions=runner.max_concurrent) from None
    location = href(f"{entity.path}/scripts/{sc.id}/executions/{record.id}")
    return json_response(record.body(state.xv), status=202, headers={"Location": location})


def _execution(request: web.Request) -> tuple[GatewayState, ScriptService, Entity, Execution]:
    state, svc, entity = _context(request)
    script_id = request.match_info["script_id"]
    exec_id = request.match_info["execution_id"]
    record = svc.runner.executions.get(exec_id)
    if record is None or record.script_id != script_id or record.entity_id != entity.id \
            or record.kind != entity.kind:
        raise not_found(f"Execution '{exec_id}' of script '{script_id}' not found on "
                        f"{entity.type} '{entity.id}'", entity_id=entity.id,
                        script_id=script_id, execution_id=exec_id)
    return state, svc, entity, record


async def list_executions(request: web.Request) -> web.Response:
    """Executions of a script on the entity, oldest first."""
    state, svc, entity = _context(request)
    sc = svc.script(entity, request.match_info["script_id"])
    items = [e.body(state.xv) for e in svc.runner.executions.values()
             if e.script_id == sc.id and e.entity_id == entity.id and e.kind == entity.kind]
    return json_response(envelope(state, items, entity.id))


async def get_execution(request: web.Request) -> web.Response:
    """Status, output and exit code of one execution."""
    state, _svc, _entity, record = _execution(request)
    return json_response(record.body(state.xv))


async def control_execution(request: web.Request) -> web.Response:
    """stop (SIGTERM) or forced_termination (SIGKILL) to the run's process group (202)."""
    state, svc, _entity, record = _execution(request)
    try:
        body = await request.json() if request.can_read_body else {}
    except ValueError:
        raise invalid_parameter("The request body is not valid JSON") from None
    action = body.get("action") if isinstance(body, dict) else None
    if action not in (STOP, FORCED):
        raise invalid_parameter("action must be stop (SIGTERM) or forced_termination (SIGKILL)",
                                parameter="action", value=action)
    try:
        svc.runner.stop(record, action)
    except NotRunning as exc:
        raise _vendor(request, 409, "script-not-running", str(exc), execution_id=record.id) from None
    return json_response(record.body(state.xv), status=202,
                         headers={"Location": request.path.rstrip("/")})


async def delete_execution(request: web.Request) -> web.Response:
    """Forget a finished execution (204); 409 while it runs."""
    _state, svc, _entity, record = _execution(request)
    try:
        svc.runner.delete(record)
    except NotRunning as exc:
        raise _vendor(request, 409, "script-running", str(exc), execution_id=record.id) from None
    return web.Response(status=204)


def install(app: web.Application, state: GatewayState) -> None:
    """The script service (uploads loaded; executions killed when the feature services stop,
    app.feature_services)."""
    disc = app.get(DISCOVERY)  # manifest modes: the manifest's scripts
    svc = app[SCRIPT_SERVICE] = ScriptService(state, disc.script_entries if disc else None)
    if not svc.enabled:
        state.features.discard("scripts")  # root capability `scripts` false; routes answer 501
        return
    state.features.add("scripts")
    assert svc.scripts_dir is not None
    if not svc.scripts_dir.is_dir():
        log.warning("scripts.scripts_dir %s is not a directory: no managed scripts until it "
                    "exists", svc.scripts_dir)
    svc.load()
    svc.runner.containment.end_leftovers()  # runs of a gateway process that was killed
    forbid_inspection()  # scripts of the gateway's own user cannot read its memory or /proc
    log.info("script runs are contained by %s", svc.runner.containment.kind)
    if os.geteuid() == 0 and svc.run_as.gid is None:
        log.warning(ROOT_WARNING)
    if anonymous_callers(state.settings) and svc.settings.allow_anonymous:
        log.warning("scripts.allow_anonymous is on with auth off (or auth.require_auth_for="
                    "none): anyone who reaches this gateway can upload and run code on it")
    state.health.update(svc.health_blocks())  # its place in /health: before the ROS side's


def register(reg: Registry) -> None:
    """Declare the script routes (components and apps)."""
    kw: dict[str, Any] = {"types": CA, "feature": "scripts"}
    base = "/scripts/{script_id}"
    ex = base + "/executions/{execution_id}"
    reg.entity_routes("GET", "/scripts", list_scripts, response="ScriptList",
                      summary="List scripts", **kw)
    reg.entity_routes("POST", "/scripts", upload, role=Role.CONFIGURATOR, status=201,
                      request="ScriptUpload", response="ScriptCreated",
                      extra={"request_content_type": "multipart/form-data"},
                      summary="Upload a script (multipart/form-data)", **kw)
    reg.entity_routes("GET", base, get_script, response="Script", summary="Script metadata",
                      **kw)
    reg.entity_routes("DELETE", base, delete_script, role=Role.CONFIGURATOR, status=204,
                      summary="Delete an uploaded script", **kw)
    reg.entity_routes("POST", base + "/executions", start_execution, role=Role.OPERATOR,
                      status=202, request="ScriptExecutionRequest", response="ScriptExecution",
                      summary="Run a script", **kw)
    reg.entity_routes("GET", base + "/executions", list_executions,
                      response="ScriptExecutionList", summary="Executions of a script", **kw)
    reg.entity_routes("GET", ex, get_execution, response="ScriptExecution",
                      summary="Execution status and output", **kw)
    reg.entity_routes("PUT", ex, control_execution, role=Role.OPERATOR, status=202,
                      request="ScriptExecutionControl", response="ScriptExecution",
                      summary="Stop or kill an execution", **kw)
    reg.entity_routes("DELETE", ex, delete_execution, role=Role.OPERATOR, status=204,
                      summary="Delete a finished execution", **kw)
