"""Logs: `/rosout` entries of an entity's nodes, and the entity's log configuration."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import bad_request, invalid_parameter
from ..http.jsonutil import json_response
from ..http.resource_helpers import envelope, federation, local_member_apps, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..model.entities import Entity
from ..model.roles import Role
from ..ros.topics.rosout import (
    SEVERITIES,
    entry,
    logger_to_node,
    select,
    severity_rank,
)
from ..wire.bodies import read_object
from ..wire.entities import aggregation
from .wire import LOGS

DEFAULT_CONFIG = {"severity_filter": "debug", "max_entries": 100}
MAX_ENTRIES = 10000
MAX_CONTEXT = 256  # longest ?context= filter


def validate_config(body: Any, current: dict[str, Any]) -> dict[str, Any]:
    """The configuration after applying a PUT body; ApiError 400 naming every bad field."""
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object with 'severity_filter' and/or "
                          "'max_entries'")
    if body and not any(k in DEFAULT_CONFIG for k in body):  # a typo must not pass as a no-op
        unknown = ", ".join(sorted(str(k) for k in body)[:5])
        raise bad_request(f"The body names no known field ({unknown}); give 'severity_filter' "
                          "and/or 'max_entries'", fields=sorted(str(k) for k in body)[:20])
    out = dict(current)
    bad: list[tuple[str, str]] = []
    if "severity_filter" in body:
        value = body["severity_filter"]
        if value in SEVERITIES:
            out["severity_filter"] = value
        else:
            bad.append(("severity_filter",
                        f"'severity_filter' must be one of {', '.join(SEVERITIES)}; got {value!r}"))
    if "max_entries" in body:
        value = body["max_entries"]
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema: 100.0 is an integer
        if isinstance(value, bool) or not isinstance(value, int) or not (
                1 <= value <= MAX_ENTRIES):
            bad.append(("max_entries",
                        f"'max_entries' must be an integer from 1 to {MAX_ENTRIES}; "
                        f"got {value!r}"))
        else:
            out["max_entries"] = value
    if bad:
        raise invalid_parameter("; ".join(m for _, m in bad), field=bad[0][0],
                                fields=[{"field": f, "message": m} for f, m in bad])
    return out


class LogConfigurations:
    """Each entity's log configuration (PUT .../logs/configuration), kept in memory."""

    def __init__(self) -> None:
        self.by_entity: dict[tuple[str, str], dict[str, Any]] = {}

    def of(self, entity: Entity) -> dict[str, Any]:
        """The entity's log configuration (defaults until a PUT)."""
        return self.by_entity.get((entity.kind, entity.id), DEFAULT_CONFIG)


LOG_CONFIGURATIONS: web.AppKey[LogConfigurations] = web.AppKey("log_configurations",
                                                                LogConfigurations)


def members_of(state: GatewayState, entity: Entity) -> tuple[list[str], bool]:
    """(node fqns, prefix match): apps exact, functions their hosts, components/areas prefix."""
    fqns = [a.node_fqn for a in local_member_apps(state, entity) if a.node_fqn]
    return fqns, entity.kind in ("components", "areas")


async def list_logs(request: web.Request) -> web.Response:
    """Newest entries of the entity's nodes, filtered by its configuration."""
    state = state_of(request)
    entity = resolve_entity(request)
    rosout = state.rosout
    config = request.app[LOG_CONFIGURATIONS].of(entity)
    floor, context = _query_filters(request, config["severity_filter"])
    loggers, records = rosout.snapshot()
    node_fqns = frozenset(n.fqn for n in state.cache.graph.nodes)
    nodes = {name: logger_to_node(name, node_fqns) for name in loggers}
    if context:  # substring of the logger or node name
        records = [r for r in records
                   if context in r.logger or context in nodes.get(r.logger, "")]
    members, prefix = members_of(state, entity)
    picked = select(records, nodes, members, prefix, floor, config["max_entries"])
    items = [state.serializer(LOGS).entry(entry(r, nodes[r.logger])) for r in picked]
    fed = federation(state)
    peers = fed.contributors(request, entity) if fed is not None else []
    if peers:  # the newest max_entries of every gateway's entries, oldest first
        return json_response(await fed.merge_list(request, entity, "logs", items, peers=peers,
                                                  limit=config["max_entries"]))
    return json_response(envelope(state, items, entity.id,
                                  **aggregation(entity, state.cache.entities)))


def _query_filters(request: web.Request, configured: str) -> tuple[str, str]:
    """(lowest severity, context substring) of ?severity= and ?context= over the configuration."""
    severity = request.query.get("severity")
    if severity is not None and severity not in SEVERITIES:
        raise invalid_parameter(
            f"Invalid severity value: must be one of {', '.join(SEVERITIES)}",
            parameter="severity", value=severity)
    context = request.query.get("context", "")
    if len(context) > MAX_CONTEXT:
        raise invalid_parameter(f"context filter exceeds maximum length of {MAX_CONTEXT}",
                                parameter="context")
    floor = configured
    if severity is not None and severity_rank(severity) > severity_rank(configured):
        floor = severity
    return floor, context


async def get_log_configuration(request: web.Request) -> web.Response:
    """severity_filter and max_entries of the entity."""
    entity = resolve_entity(request)
    return json_response(dict(request.app[LOG_CONFIGURATIONS].of(entity)))


async def put_log_configuration(request: web.Request) -> web.Response:
    """Change severity_filter and/or max_entries (204)."""
    entity = resolve_entity(request)
    body = await read_object(request)  # an empty body changes nothing (as {})
    configs = request.app[LOG_CONFIGURATIONS]
    configs.by_entity[(entity.kind, entity.id)] = validate_config(body, configs.of(entity))
    return web.Response(status=204)


def register(reg: Registry) -> None:
    """Declare the log routes."""
    reg.entity_routes("GET", "/logs", list_logs, response="ListEnvelope",
                      summary="Log entries from /rosout")
    reg.entity_routes("GET", "/logs/configuration", get_log_configuration,
                      response="LogConfiguration", summary="Log configuration")
    reg.entity_routes("PUT", "/logs/configuration", put_log_configuration,
                      role=Role.CONFIGURATOR, status=204, request="LogConfiguration",
                      summary="Change the log configuration")
