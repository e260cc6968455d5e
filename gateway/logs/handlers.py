"""Logs: `/rosout` entries of an entity's nodes, and the entity's log configuration."""

from __future__ import annotations

from aiohttp import web

from ..errors import invalid_parameter
from ..http.jsonutil import json_response
from ..http.resource_helpers import envelope, federation, resolve_entity
from ..http.routes import Registry
from ..http.state import state_of
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
from .configs import LOG_CONFIGURATIONS, validate_config
from .members import members_of
from .wire import LOGS

MAX_CONTEXT = 256  # longest ?context= filter


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
