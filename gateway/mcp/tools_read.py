"""Read-only tools: entities, faults, data, operations, configurations, logs, recordings, health."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from .env import ToolEnv, ToolFailure, call, epath
from .recording import summarize
from .rest import segment
from .shape import (
    clip,
    configuration_summary,
    data_summary,
    entity_detail,
    entity_summary,
    fault_detail,
    fault_matches,
    fault_summary,
    health_summary,
    items_of,
    log_summary,
    operation_summary,
    page,
    partial_note,
    recording_summary,
    rosbag_snapshot_summary,
    xv,
)
from .shape import (
    fleet_status as fleet_summary,
)

Entity = Annotated[str, Field(description="entity path as in the REST API: apps/temp_sensor, "
                                          "components/vm (on a primary: its fleet id)")]
Offset = Annotated[int, Field(ge=0, description="first item of the page")]
Limit = Annotated[int | None, Field(ge=1, description="items per page (capped by the server)")]
KINDS = ("areas", "components", "apps", "functions")
MAX_FAULTS_SEARCHED = 10  # fault details read to find a recording a primary does not list


def register(add: Callable[..., Any], env: ToolEnv) -> None:  # noqa: C901 - counts its tools
    """Add the read tools through `add(fn, name, read_only)`."""

    async def list_entities(ctx: Context, kind: str | None = None, robot: str | None = None,
                            offset: Offset = 0, limit: Limit = None) -> dict[str, Any]:
        """List entities (apps, components, areas, functions) with online state; filter by kind or robot."""
        kinds = [kind] if kind else list(KINDS)
        if kind and kind not in KINDS:
            raise ToolFailure(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
        bodies = await asyncio.gather(*(call(env, ctx, "list_entities", "GET", f"/{k}")
                                        for k in kinds))
        items = [entity_summary(i, k) for k, b in zip(kinds, bodies, strict=True)
                 for i in items_of(b)]
        if robot:
            items = [i for i in items if robot in (i.get("robots") or []) or
                     i.get("gateway") == robot or i["entity"].split("/", 1)[1]
                     .startswith(robot + "__")]
        return page(items, offset, env.limit(limit))

    async def get_entity(ctx: Context, entity: Entity) -> dict[str, Any]:
        """One entity: name, online state, host component, node, capabilities."""
        return entity_detail(await call(env, ctx, "get_entity", "GET", epath(entity)))

    async def list_faults(ctx: Context, status: str | None = None, severity: str | None = None,
                          entity: str | None = None, robot: str | None = None,
                          offset: Offset = 0, limit: Limit = None) -> dict[str, Any]:
        """List faults, newest state first; filters: status (e.g. active, confirmed, all), severity (ERROR, WARN...), entity, robot."""
        path = (epath(entity) if entity else "") + "/faults"
        body = await call(env, ctx, "list_faults", "GET", path,
                          params={"status": status} if status else None)
        faults = [f for f in items_of(body) if fault_matches(f, severity, robot)]
        return {**page([fault_summary(f) for f in faults], offset, env.limit(limit)),
                **partial_note(body)}

    async def get_fault(ctx: Context, entity: Entity, code: str) -> dict[str, Any]:
        """One fault of an entity: status, extended data, freeze frames, recordings, correlation."""
        body = await call(env, ctx, "get_fault", "GET", f"{epath(entity)}/faults/{segment(code)}")
        return fault_detail(body)

    async def read_data(ctx: Context, entity: Entity, data_id: str) -> dict[str, Any]:
        """The latest value of one data item (a topic) of an entity, clipped for size."""
        body = await call(env, ctx, "read_data", "GET",
                          f"{epath(entity)}/data/{segment(data_id)}")
        ext = xv(body)
        return {"id": body.get("id"), "data": clip(body.get("data")),
                "type": (ext.get("ros2") or {}).get("type")}

    async def list_data(ctx: Context, entity: Entity, offset: Offset = 0,
                        limit: Limit = None) -> dict[str, Any]:
        """The data items (topics) of an entity: id, type, direction."""
        body = await call(env, ctx, "list_data", "GET", f"{epath(entity)}/data")
        return page([data_summary(i) for i in items_of(body)], offset,
                          env.limit(limit))

    async def list_operations(ctx: Context, entity: Entity, offset: Offset = 0,
                              limit: Limit = None) -> dict[str, Any]:
        """The operations (services, actions) of an entity with their request shape."""
        body = await call(env, ctx, "list_operations", "GET", f"{epath(entity)}/operations")
        return page([operation_summary(i) for i in items_of(body)], offset,
                          env.limit(limit))

    async def get_execution(ctx: Context, entity: Entity, operation: str,
                            execution_id: str) -> dict[str, Any]:
        """The state of one operation execution (an action goal): status, progress, result."""
        body = await call(env, ctx, "get_execution", "GET",
                          f"{epath(entity)}/operations/{segment(operation)}/executions/"
                          f"{segment(execution_id)}")
        return clip(body)

    async def list_configurations(ctx: Context, entity: Entity, offset: Offset = 0,
                                  limit: Limit = None) -> dict[str, Any]:
        """The configurations (ROS parameters) of an entity with their values."""
        body = await call(env, ctx, "list_configurations", "GET",
                          f"{epath(entity)}/configurations")
        return page([configuration_summary(i) for i in items_of(body)],
                          offset, env.limit(limit))

    async def get_configuration(ctx: Context, entity: Entity, config_id: str) -> dict[str, Any]:
        """One configuration (parameter) value of an entity."""
        body = await call(env, ctx, "get_configuration", "GET",
                          f"{epath(entity)}/configurations/{segment(config_id)}")
        return configuration_summary(body)

    async def list_logs(ctx: Context, entity: Entity, severity: str | None = None,
                        limit: Limit = None) -> dict[str, Any]:
        """The newest log entries of an entity (rosout), optionally at or above a severity."""
        n = env.limit(limit)
        body = await call(env, ctx, "list_logs", "GET", f"{epath(entity)}/logs",
                          params={"severity": severity} if severity else None)
        items = [log_summary(i) for i in items_of(body)]
        return {"total": len(items), "items": items[-n:], **partial_note(body)}

    async def list_recordings(ctx: Context, entity: Entity, offset: Offset = 0,
                              limit: Limit = None) -> dict[str, Any]:
        """Rosbag recordings made when faults confirmed, visible from an entity."""
        body = await call(env, ctx, "list_recordings", "GET", f"{epath(entity)}/bulk-data/rosbags")
        return page([recording_summary(i) for i in items_of(body)], offset,
                          env.limit(limit))

    async def get_recording_summary(ctx: Context, entity: Entity, recording_id: str,
                                    around_sec: float = 2.0) -> dict[str, Any]:
        """A recording without downloading it: fault codes, topics, time range, messages around the fault."""
        body = await call(env, ctx, "get_recording_summary", "GET",
                          f"{epath(entity)}/bulk-data/rosbags")
        found = [recording_summary(i) for i in items_of(body)
                 if i.get("id") == recording_id]
        if not found:  # a primary lists no robot's bags: its faults' details name them
            found = await _from_fault_details(ctx, entity, recording_id)
        if not found:
            raise ToolFailure(f"404 resource-not-found: no recording {recording_id!r} "
                              f"visible from {entity}")
        out = found[0]
        bulk = env.rest(ctx).recordings
        if bulk is not None and bulk.recorder is not None:
            detail = await asyncio.to_thread(summarize, bulk.recorder, recording_id,
                                             max(0.1, min(around_sec, 60.0)))
            if detail is not None:
                out.update(detail)
        return out

    async def _from_fault_details(ctx: Context, entity: str,
                                  recording_id: str) -> list[dict[str, Any]]:
        path = epath(entity)
        faults = items_of(await call(env, ctx, "get_recording_summary", "GET",
                                           f"{path}/faults", params={"status": "all"}))
        for fault in faults[:MAX_FAULTS_SEARCHED]:
            code = str(fault.get("fault_code") or fault.get("code"))
            detail = await call(env, ctx, "get_recording_summary", "GET",
                                f"{path}/faults/{segment(code)}")
            for snap in (detail.get("environment_data") or {}).get("snapshots") or []:
                if snap.get("type") == "rosbag" and str(snap.get("bulk_data_uri", "")
                                                        ).endswith("/" + recording_id):
                    return [rosbag_snapshot_summary(snap, recording_id, code)]
        return []

    async def health(ctx: Context) -> dict[str, Any]:
        """Gateway health: status, readiness, warnings, and on a primary its robots."""
        return health_summary(await call(env, ctx, "health", "GET", "/health"))

    async def fleet_status(ctx: Context) -> dict[str, Any]:
        """On a primary: every robot, online or not, with its active faults by severity."""
        health_body, faults = await asyncio.gather(
            call(env, ctx, "fleet_status", "GET", "/health"),
            call(env, ctx, "fleet_status", "GET", "/faults"))
        return {**fleet_summary(health_body, items_of(faults)),
                **partial_note(faults)}

    async def list_locks(ctx: Context, entity: Entity) -> dict[str, Any]:
        """The locks held on an entity."""
        body = await call(env, ctx, "list_locks", "GET", f"{epath(entity)}/locks")
        return {"items": clip(items_of(body))}

    async def list_scripts(ctx: Context, entity: Entity) -> dict[str, Any]:
        """The managed scripts of a component or app."""
        body = await call(env, ctx, "list_scripts", "GET", f"{epath(entity)}/scripts")
        return {"items": [{k: v for k, v in i.items() if k in ("id", "name", "description")}
                          for i in items_of(body)][:env.page_size]}

    for fn in (list_entities, get_entity, list_faults, get_fault, read_data, list_data,
               list_operations, get_execution, list_configurations, get_configuration,
               list_logs, list_recordings, get_recording_summary, health, fleet_status,
               list_locks, list_scripts):
        add(fn, fn.__name__, True)
