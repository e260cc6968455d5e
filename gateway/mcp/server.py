"""The MCP server: tools, resources and the triage prompt over one ToolEnv (imports the SDK)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

from .env import ToolEnv, call
from .rest import CURRENT, Rest
from .shape import entity_summary, fault_matches, fault_summary, items_of, page
from .tools_act import register as register_act
from .tools_read import KINDS
from .tools_read import register as register_read

INSTRUCTIONS = (
    "Diagnostic gateway for ROS 2 robots (SOVD-style). Entities are named by path: "
    "apps/<id>, components/<id>, areas/<id>, functions/<id>; on a fleet primary robots' "
    "entities carry their fleet id. Start with fleet_status or list_faults, then get_fault "
    "(freeze frames, recordings), read_data, list_logs and get_recording_summary. Writes "
    "(clear_fault, write_data, call_operation, set_configuration, lock, run_script) obey the "
    "caller's role and locks exactly as the REST API does; a refusal names the reason.")

def build(env: ToolEnv, version: str = "") -> MCPServer:
    """A server whose tools call the REST API through `env`."""
    server: MCPServer = MCPServer("diag-gateway", instructions=INSTRUCTIONS, version=version,
                                  warn_on_duplicate_tools=False)

    def add(fn: Any, name: str, read_only: bool) -> None:
        server.add_tool(fn, name=name, annotations=ToolAnnotations(
            read_only_hint=read_only, destructive_hint=not read_only,
            open_world_hint=False))

    register_read(add, env)
    register_act(add, env)
    _resources(server, env)
    _prompts(server, env)
    return server


def _resources(server: MCPServer, env: ToolEnv) -> None:
    @server.resource("diag://entities", name="entity-tree", mime_type="application/json",
                     description="Every entity by kind, with online state and host")
    async def entity_tree() -> str:
        rest = _current(env)
        out: dict[str, Any] = {}
        for kind in KINDS:
            body = await rest.call("GET", f"/{kind}", tool="resource:entities")
            out[kind] = [entity_summary(i, kind) for i in items_of(body)]
        return json.dumps(out)

    @server.resource("diag://faults/active", name="active-faults", mime_type="application/json",
                     description="Active faults of the gateway (a primary: the whole fleet)")
    async def active_faults() -> str:
        body = await _current(env).call("GET", "/faults", tool="resource:faults")
        items = [fault_summary(f) for f in items_of(body)]
        return json.dumps(page(items, 0, env.page_size))


def _current(env: ToolEnv) -> Rest:
    rest = CURRENT.get()
    if rest is not None:
        return rest
    return env.rest(None)


TRIAGE_STEPS = """\
You are triaging a robot with the diag-gateway MCP tools. Work in this order and cite what
each tool returned:
1. fleet_status (on a primary) or health: is {target} online, how many faults by severity?
2. list_faults with robot={robot_arg}: the active faults, most severe first.
3. get_fault for each of the (at most 3) most severe: freeze frames, extended data,
   recordings, correlation (root cause vs symptom).
4. read_data / list_logs on the reporting entities for the current values and errors.
5. list_recordings and get_recording_summary for the messages around each fault.
Then answer: what is wrong, since when, the likely root cause, and the safe next action
(suggest writes such as clear_fault or set_configuration; do them only if asked).
"""


def _prompts(server: MCPServer, env: ToolEnv) -> None:
    @server.prompt(name="triage", title="Summarize what is wrong with a robot",
                   description="A triage workflow for one robot (or the gateway itself)")
    async def triage(ctx: Context, robot: str = "") -> str:
        """The triage steps and the robot's current faults."""
        robot_arg = repr(robot) if robot else "None (this gateway)"
        text = TRIAGE_STEPS.format(target=robot or "the gateway", robot_arg=robot_arg)
        try:
            body = await call(env, ctx, "prompt:triage", "GET", "/faults")
        except Exception as exc:  # the prompt still guides; the reason is shown
            return text + f"\nCurrent faults could not be read: {exc}\n"
        faults = [fault_summary(f) for f in items_of(body)
                  if fault_matches(f, None, robot or None)]
        faults.sort(key=lambda f: (f.get("severity") != "CRITICAL", f.get("severity") != "ERROR"))
        snapshot = json.dumps(faults[:20], indent=1)
        return text + f"\nCurrent faults ({len(faults)}; first 20):\n{snapshot}\n"
