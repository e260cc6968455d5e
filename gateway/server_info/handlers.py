"""Server-level resources: root, version-info, health, OpenAPI documents."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from .. import __version__
from .._fast import MSGCONV_IMPL
from ..auth.settings import AuthSettings
from ..data.topics import entity_topics
from ..discovery.keys import DISCOVERY
from ..discovery.settings import DiscoverySettings
from ..errors import not_found
from ..http import hot
from ..http.jsonutil import JSON_TYPE, dumps, json_response
from ..http.openapi import build, project
from ..http.resource_helpers import entities, federation
from ..http.routes import API_PREFIX, ENTITY_TYPES, Registry
from ..http.settings import DocsSettings
from ..http.state import GatewayState, state_of
from ..operations.listing import entity_operations
from ..process.settings import ServerSettings
from ..ros.dds.embedded import ros_versions
from ..ros.topics.samples import implementation as sample_implementation

API_VERSION = "1.0.0"
# Collections a scoped /docs prefix may end in; these others answer 404 there.
DOCS_COLLECTIONS = frozenset({
    "data", "data-categories", "data-groups", "operations", "faults", "configurations", "logs",
    "bulk-data", "cyclic-subscriptions", "triggers", "updates", "hosts",
})
DOCS_REFUSED = frozenset({"locks", "status", "scripts", "fault-triggers"})

# Root capability flags, keyed by the feature name each later build registers.
CAPABILITY_FEATURES = (
    ("discovery", None), ("data_access", None), ("operations", "operations"),
    ("async_actions", "operations"), ("configurations", "configurations"),
    ("faults", "faults"), ("logs", "logs"), ("bulk_data", "bulk-data"),
    ("cyclic_subscriptions", "cyclic-subscriptions"), ("triggers", "triggers"),
    ("updates", "updates"), ("authentication", "auth"), ("tls", "tls"),
    ("aggregation", "aggregation"), ("locking", "locks"), ("scripts", "scripts"),
    ("vendor_extensions", None),
)


async def root(request: web.Request) -> web.Response:
    """Gateway name, version, endpoints and capabilities."""
    state = state_of(request)
    caps = {name: feature is None or feature in state.features
            for name, feature in CAPABILITY_FEATURES}
    endpoints = [f"{r.method} {API_PREFIX}{r.path}" for r in state.registry
                 if not r.extra.get("stub")]
    body: dict[str, Any] = {
        "name": state.wire.errors.product_name("product"),
        "version": __version__,
        "api_base": API_PREFIX,
        "endpoints": endpoints,
        "capabilities": caps,
    }
    s = state.settings
    if "auth" in state.features:
        auth = s.typed(AuthSettings.from_settings)
        body["auth"] = {"enabled": True, "algorithm": auth.jwt_algorithm,
                        "require_auth_for": auth.require_auth_for}
    if "tls" in state.features:
        body["tls"] = {"enabled": True,
                       "min_version": s.typed(ServerSettings.from_settings).tls_min_version}
    return json_response(body)


async def version_info(request: web.Request) -> web.Response:
    """Supported API versions (with aggregation: each peer's too, tagged with its name)."""
    state = state_of(request)
    items = [{
        "version": API_VERSION,
        "base_uri": API_PREFIX,
        "vendor_info": {"version": __version__,
                        "name": state.wire.errors.product_name("vendor")},
        state.xv: {"ros2": ros_versions()},  # the ROS 2 the gateway embeds
    }]
    fed = federation(state)
    if fed is None or fed.no_fan_out(request):
        # this gateway's own answer never changes while it runs: served again on the fast
        # path (with aggregation, to requests for this gateway's answer alone: a primary's
        # fan-out read of a robot)
        body = dumps({"items": items})
        if fed is None:
            hot.offer(state, request, lambda: body)
        else:
            hot.offer_merged(state, request, lambda r: body if fed.no_fan_out(r) else None)
        return web.Response(body=body, content_type=JSON_TYPE)
    return await fed.merged_response(
        request, "version-info", lambda: None, "version-info",
        lambda: fed.merge_server_list(request, "version-info", "/version-info", items))


def _warnings(state: GatewayState) -> list[dict[str, Any]]:
    out = []
    es = state.cache.entities
    by_fqn = {a.node_fqn: a.id for a in es.apps.values()}
    for name, fqns in state.cache.collisions:
        out.append({
            "code": "leaf_id_collision",
            "message": f"{len(fqns)} nodes are named '{name}'; their app ids carry the "
                       "namespace as a prefix",
            "entity_ids": [by_fqn[f] for f in fqns if f in by_fqn],
            "ros_node_fqns": fqns,
            "peer_names": [],
        })
    for provider in state.health_warnings:  # e.g. plugins that failed to load
        out.extend(provider())
    return out


def _deaf_warning(reason: str) -> dict[str, Any]:
    return {"code": "dds_not_hearing",
            "message": f"the gateway's DDS participant does not hear the graph: {reason}",
            "entity_ids": [], "ros_node_fqns": [], "peer_names": []}


async def health(request: web.Request) -> web.Response:
    """Operational status, discovery pipeline and provider figures."""
    state = state_of(request)
    xv = state.xv
    executor = state.bridge.health()
    executor["graph_events_received"] = state.poller.events
    es = state.cache.entities
    disc = request.app.get(DISCOVERY)  # manifest-backed modes (discovery/pipeline.py)
    # Readiness: entity lists are complete only once discovery settled after the start.
    ready = state.poller.ready.is_set()
    # The DDS side does not hear the graph (ros/rejoin/hearing.py): degraded, with the reason.
    hearing = getattr(state.bridge, "hearing", None)
    deaf = hearing.state.reason if hearing is not None and hearing.deaf else None
    storage = state.storage.failing()  # stores whose writes fail (process/storage.py)
    degraded = not executor["worker_alive"] or deaf is not None or bool(storage)
    status = "degraded" if degraded else "healthy" if ready else "starting"
    body: dict[str, Any] = {
        "status": status,
        "ready": ready,
        "timestamp": time.time_ns(),
        "warning_schema_version": 2,
        "warnings": _warnings(state) + (disc.warnings() if disc is not None else []) + (
            [] if deaf is None else [_deaf_warning(deaf)]) + [f.warning() for f in storage],
        "discovery": {
            "mode": state.settings.typed(DiscoverySettings.from_settings).mode,
            "strategy": "runtime",
            "pipeline": {
                "layers": ["runtime"],
                "total_entities": es.total(),
                "enriched_count": 0,
                "conflict_count": 0,
                "conflicts": [],
                "id_collisions": [name for name, _ in state.cache.collisions],
                "filtered_by_gap_fill": 0,
            },
        },
        f"{xv}-subscription-executor": executor,
        f"{xv}-data-provider": state.pool.stats(state.poller.events),
        f"{xv}-entity-cache": state.cache.stats(),
        f"{xv}-ros2": ros_versions(),
        f"{xv}-msgconv": {"implementation": sample_implementation(),
                          "compiled_twin_loaded": MSGCONV_IMPL == "compiled"},
        f"{xv}-storage": state.storage.health(),
    }
    if disc is not None:
        body["discovery"] = disc.health()
    for key, provider in state.health.items():
        body[key.replace("x-vendor", xv)] = provider()
    return json_response(body, status=503 if degraded else 200)


def _document(state: GatewayState) -> dict[str, Any]:
    if not state.settings.typed(DocsSettings.from_settings).enabled:
        raise state.wire.errors.feature_absent(
            "docs", "Set docs.enabled to true")
    if state.openapi is None:
        state.openapi = state.wire.docs.finish(build(
            state.registry, vendor=state.vendor, version=__version__,
            with_roles=state.settings.typed(AuthSettings.from_settings).enabled))
    return state.openapi


async def docs(request: web.Request) -> web.Response:
    """The full OpenAPI 3.1 document."""
    return json_response(_document(state_of(request)))


async def scoped_docs(request: web.Request) -> web.Response:
    """The OpenAPI document projected onto the paths below an entity or collection."""
    state = state_of(request)
    doc = _document(state)
    # From the path, not match_info: item routes with multi-segment ids also land here.
    prefix = request.path[len(API_PREFIX):].rpartition("/docs")[0].strip("/")
    segs = prefix.split("/")
    last = segs[-1]
    if last in DOCS_REFUSED:
        raise not_found(f"No scoped document for '{last}'", path=prefix)
    if segs[0] not in ENTITY_TYPES or len(segs) < 2:
        if not (segs[0] in ("updates", *ENTITY_TYPES) and len(segs) == 1):
            raise not_found(f"No API paths below '/{prefix}'", path=prefix)
    expand: dict[str, list[str]] = {}
    if segs[0] in ENTITY_TYPES and len(segs) >= 2:
        entity = entities(request).get(segs[0], segs[1])
        if entity is None:
            raise not_found(f"Unknown entity '/{segs[0]}/{segs[1]}'", entity_id=segs[1])
        if len(segs) > 2 and segs[2] not in DOCS_COLLECTIONS:
            raise not_found(f"No scoped document for '{segs[2]}'", path=prefix)
        expand["data_id"] = list(entity_topics(state, entity))
        expand["op_id"] = [op.id for op in entity_operations(state, entity)]
    projected = project(doc, "/" + prefix, expand)
    if projected is None:
        raise not_found(f"No API paths below '/{prefix}'", path=prefix)
    return json_response(projected)


def register(reg: Registry) -> None:
    """Declare the server-level routes."""
    reg.add("GET", "/", root, summary="Gateway capabilities")
    reg.add("GET", "/version-info", version_info, summary="Supported API versions")
    reg.add("GET", "/health", health, summary="Gateway health")
    reg.add("GET", "/docs", docs, summary="OpenAPI document", tag="docs")


def register_docs(reg: Registry) -> None:
    """The scoped docs route (the middleware also sends `<item route>/docs` here)."""
    for kind in ENTITY_TYPES:  # a collection's own document, not an entity named `docs`
        reg.add("GET", f"/{kind}/docs", scoped_docs, tag="docs",
                summary=f"OpenAPI document of the {kind} collection")
    reg.add("GET", "/{entity_path}/docs", scoped_docs, multi_segment=("entity_path",),
            summary="Scoped OpenAPI document", tag="docs")
