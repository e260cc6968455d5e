"""Logs of plugin-owned entities: the plugin's log provider, filtered by the entity's config."""

from __future__ import annotations

from aiohttp import web

from ..http.jsonutil import json_response
from ..http.resource_helpers import envelope
from ..logs.configs import LOG_CONFIGURATIONS
from ..ros.topics.rosout import SEVERITIES
from .api import LOGS
from .served import Served

RANK = {name: k for k, name in enumerate(SEVERITIES)}


def pick(entries: object, severity_filter: str, max_entries: int) -> list[dict[str, object]]:
    """The newest max_entries entries at or above severity_filter, oldest first."""
    if not isinstance(entries, list):
        return []
    floor = RANK.get(severity_filter, 0)
    out = []
    for k, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("message"), str):
            continue
        severity = e.get("severity") if e.get("severity") in RANK else "info"
        if RANK[str(severity)] >= floor:
            out.append({"id": str(e.get("id", k)), **e, "severity": severity})
    return out[-max_entries:] if max_entries > 0 else []


async def serve(s: Served) -> web.StreamResponse | None:
    """GET .../logs of a plugin entity (None: the plugin offers no logs)."""
    provider = s.provider(LOGS)
    if provider is None or not hasattr(provider, "list_logs"):
        return None
    config = s.request.app[LOG_CONFIGURATIONS].of(s.entity)
    entries = await s.call(provider.list_logs, s.eid, entity_id=s.eid)
    items = pick(entries, config["severity_filter"], int(config["max_entries"]))
    return json_response(envelope(s.state, items, s.eid))
