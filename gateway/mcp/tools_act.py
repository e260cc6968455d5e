"""Tools that change something: each is the REST write it names, under the caller's role."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context

from .env import ToolEnv, call, epath
from .rest import segment
from .shape import clip, configuration_summary, xv
from .tools_read import Entity


def register(add: Callable[..., Any], env: ToolEnv) -> None:
    """Add the write tools through `add(fn, name, read_only)`."""

    async def clear_fault(ctx: Context, entity: Entity, code: str) -> dict[str, Any]:
        """Clear one fault of an entity (operator role)."""
        await call(env, ctx, "clear_fault", "DELETE", f"{epath(entity)}/faults/{segment(code)}")
        return {"cleared": code, "entity": entity}

    async def write_data(ctx: Context, entity: Entity, data_id: str,
                         value: dict[str, Any]) -> dict[str, Any]:
        """Publish one message on a topic of the entity; `value` is the message as JSON fields."""
        body = await call(env, ctx, "write_data", "PUT",
                          f"{epath(entity)}/data/{segment(data_id)}", body=value)
        ext = xv(body)
        return {"id": body.get("id"), "status": ext.get("status", "published"),
                "subscribers_matched": ext.get("subscribers_matched")}

    async def call_operation(ctx: Context, entity: Entity, operation: str,
                             parameters: dict[str, Any] | None = None,
                             timeout_sec: float | None = None) -> dict[str, Any]:
        """Call a service (its response) or start an action (an execution id to poll with get_execution)."""
        body: dict[str, Any] = {"parameters": parameters or {}}
        if timeout_sec is not None:
            body["timeout"] = timeout_sec
        answer = await call(env, ctx, "call_operation", "POST",
                            f"{epath(entity)}/operations/{segment(operation)}/executions",
                            body=body)
        return clip(answer or {})

    async def set_configuration(ctx: Context, entity: Entity, config_id: str,
                                value: Any) -> dict[str, Any]:
        """Set one configuration (ROS parameter) of an entity (configurator role)."""
        body = await call(env, ctx, "set_configuration", "PUT",
                          f"{epath(entity)}/configurations/{segment(config_id)}",
                          body={"data": value})
        return configuration_summary(body or {"id": config_id, "value": value})

    async def lock(ctx: Context, entity: Entity, expiration_sec: int = 300,
                   break_lock: bool = False) -> dict[str, Any]:
        """Lock an entity for this client (others' writes are refused until unlock or expiry)."""
        body = await call(env, ctx, "lock", "POST", f"{epath(entity)}/locks",
                          body={"lock_expiration": expiration_sec, "break_lock": break_lock})
        return clip(body)

    async def unlock(ctx: Context, entity: Entity, lock_id: str) -> dict[str, Any]:
        """Release a lock this client holds on an entity."""
        await call(env, ctx, "unlock", "DELETE", f"{epath(entity)}/locks/{segment(lock_id)}")
        return {"released": lock_id, "entity": entity}

    async def run_script(ctx: Context, entity: Entity, script_id: str,
                         parameters: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a managed script of a component or app now (operator role)."""
        body = await call(env, ctx, "run_script", "POST",
                          f"{epath(entity)}/scripts/{segment(script_id)}/executions",
                          body={"execution_type": "now", "parameters": parameters or {}})
        return clip(body)

    for fn in (clear_fault, write_data, call_operation, set_configuration, lock, unlock,
               run_script):
        add(fn, fn.__name__, False)
