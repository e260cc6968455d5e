"""make_app(): the aiohttp application, its ROS bridge and background tasks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from federation.peer_auth import check_settings as check_peer_settings

from . import dashboard
from .auth import enforce
from .auth import routes as auth_routes
from .http import cors, ratelimit, resolve_cache
from .http.jsonutil import JSON_BODY_LIMIT, json_body_limit
from .http.middleware import make_middleware
from .http.routes import Registry
from .settings.config import Settings
from .state import STATE, GatewayState

log = logging.getLogger(__name__)

# An aiohttp cleanup context that starts the ROS side of the gateway (make_app's `ros`).
RosLifecycle = Callable[[web.Application], AsyncIterator[None]]


def build_registry(vendor: str, built: set[str], plugins: Any = None) -> Registry:
    """Every route of this build, in matching order; `built` receives the served features.

    `plugins` (a plugins.manager.PluginManager) adds the loaded plugins' routes.
    """
    from federation import routes as federation_routes  # the peer entity declaration

    from .bulk_data import handlers as bulk_data
    from .configurations import handlers as configurations
    from .dashboard import page_stream
    from .faults import handlers as faults
    from .lifecycle import handlers as lifecycle
    from .locks import handlers as locks
    from .logs import handlers as logs
    from .operations import handlers as operations
    from .push import fault_trigger_handlers as fault_triggers
    from .push import subscription_handlers as subscriptions
    from .push import trigger_handlers as triggers
    from .resources import (
        data,
        entities,
        manifest,
        server,
        status,
        unbuilt,
    )
    from .scripts import handlers as scripts
    from .updates import handlers as updates

    reg = Registry(vendor)
    server.register(reg)
    auth_routes.register(reg)
    # Data first: aiohttp tries routes sharing a static prefix in registration order, and
    # data reads are the hottest path.
    data.register(reg)
    entities.register(reg)
    for module in (operations, configurations, logs, status, faults, bulk_data,
                   federation_routes, manifest):
        module.register(reg)
    built.update({"operations", "configurations", "logs", "status", "faults", "bulk-data",
                  "manifest"})
    from .http.openapi import add_schemas
    from .lifecycle.schemas import SCHEMAS as lifecycle_schemas
    from .locks.schemas import SCHEMAS as lock_schemas
    from .scripts.schemas import SCHEMAS as script_schemas
    for schemas in (lock_schemas, script_schemas, lifecycle_schemas):
        add_schemas(schemas)
    for module in (locks, scripts, lifecycle):
        module.register(reg)
    built.update({"locks", "scripts", "lifecycle"})
    updates.register(reg)  # docs/plugins.md: 501 until an update provider plugin is loaded
    if plugins is not None:
        plugins.register_routes(reg)
    for module in (subscriptions, triggers, fault_triggers):  # push delivery (gateway/push)
        module.register(reg)
    built.update({"cyclic-subscriptions", "triggers", "fault-triggers"})
    page_stream.register(reg)  # the dashboard's one stream per page (docs/dashboard.md)
    unbuilt.register(reg, built)  # 501 rows for every feature not built
    server.register_docs(reg)
    if plugins is not None:
        from .plugins import dispatch
        dispatch.install(reg, plugins)  # plugin-owned entities reach their plugin's providers
    return reg


def make_app(settings: Settings, ros: RosLifecycle | None = None) -> web.Application:
    """The gateway application; ROS starts with the app and stops with it.

    `ros`: the cleanup context that attaches the ROS side (bridge, pool, cache, poller and the
    services over them); the real one by default, a fake robot's in the in-process tests.
    """
    from .plugins.manager import PluginManager

    built: set[str] = set()
    plugins = PluginManager(settings)  # a plugin that fails to load is a /health warning
    state = GatewayState(settings=settings,
                         registry=build_registry(settings.vendor, built, plugins))
    state.features = built
    state.plugins = plugins
    if settings["updates.enabled"] and plugins.provider("updates") is not None:
        state.features.add("updates")
    for flag, feature in (("triggers.enabled", "triggers"),
                          ("fault_triggers.enabled", "fault-triggers")):
        if not settings[flag]:  # routes answer 501; root capability and detail links off
            state.features.discard(feature)
    app = web.Application(client_max_size=16 * 1024 * 1024)
    app[STATE] = state
    app[JSON_BODY_LIMIT] = json_body_limit(settings)
    state.route_table = state.registry.install(app)
    resolve_cache.install(app)  # hot paths resolve by one lookup (docs/performance.md)
    state.docs_route = next(r for r in state.registry if r.path == "/{entity_path}/docs")
    app.middlewares.append(make_middleware(state))
    # Security (docs/security.md): each inserts an outer middleware, so CORS ends outermost.
    enforce.install(app, state)
    ratelimit.install(app, state)
    cors.install(app, state)
    dashboard.install(app, state)  # GET / and /dashboard/* (docs/dashboard.md)
    from . import mcp
    mcp.install(app, state)  # /mcp: the MCP server, SDK loaded on first use (docs/mcp.md)
    if settings["server.tls.enabled"]:
        state.features.add("tls")
    check_peer_settings(settings)
    if settings["discovery.mode"] != "runtime_only":  # docs/manifest.md
        from .discovery.pipeline import ManifestDiscovery
        state.discovery = ManifestDiscovery(settings)  # ManifestError: not served
    app.cleanup_ctx.append(_storage_probe)  # a failing store recovers by itself
    app.cleanup_ctx.append(ros or _ros_lifecycle)
    from .lifecycle import handlers as lifecycle  # after ROS: they stop before it
    from .locks import handlers as locks
    from .scripts import handlers as scripts
    for module in (locks, scripts, lifecycle):
        module.install(app, state)
    if plugins.provider("scripts") is not None:  # a plugin backend serves its entities' scripts
        state.features.add("scripts")
    if settings["aggregation.enabled"] or settings["aggregation.announce"] \
            or settings["aggregation.connect_to"]:
        from federation.install import install as install_federation  # docs/federation.md
        install_federation(app, state)
    return app


async def _storage_probe(app: web.Application) -> AsyncIterator[None]:
    from .process.storage import probe_loop

    task = asyncio.ensure_future(probe_loop(app[STATE].storage))
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _start_plugins(state: GatewayState) -> None:
    from .updates.manager import UpdateManager

    plugins = state.plugins
    assert plugins is not None  # make_app made it
    await plugins.start(state)
    found = plugins.provider("updates")
    if state.settings["updates.enabled"] and found is not None:
        loaded, provider = found
        state.updates = UpdateManager(state, provider, plugins.caller(loaded.name),
                                      state.settings["updates.operation_timeout_sec"])


async def _stop_plugins(state: GatewayState) -> None:
    updates, state.updates = state.updates, None
    if updates is not None:
        await updates.close()
    if state.plugins is not None:
        await state.plugins.stop()


@contextlib.asynccontextmanager
async def feature_services(app: web.Application) -> AsyncIterator[None]:
    """The services over the ROS side, in their start order, stopped in reverse: uploads and
    the recorder (a fault listener) before the faults; the plugins (and the update manager
    over a plugin's provider); push delivery (subscriptions, triggers, fault triggers) after
    the faults. The real ROS lifecycle and the in-process tests' fake one both run it."""
    from .bulk_data import handlers as bulk_data
    from .faults.service import FaultService
    from .push import service as push

    state = app[STATE]
    await bulk_data.start(state)
    faults = state.faults = FaultService(state)
    await faults.start()
    app.on_shutdown.append(faults.on_shutdown)
    await _start_plugins(state)
    await push.start(state)
    app.on_shutdown.append(lambda _app: push.on_shutdown(state))
    try:
        yield
    finally:
        await push.stop(state)
        await _stop_plugins(state)
        await faults.stop()
        await bulk_data.stop(state)


async def _ros_lifecycle(app: web.Application) -> AsyncIterator[None]:
    from .discovery.cache import EntityCache
    from .discovery.empty_domain import EmptyDomain, domain_source
    from .discovery.poller import GraphPoller
    from .discovery.runtime import HostInfo
    from .operations.handlers import state_directory
    from .process import loopslice
    from .process.gcpolicy import GcPolicy
    from .process.looplag import LoopLag
    from .ros import typesources
    from .ros.actions import ActionManager
    from .ros.bridge import start_ros
    from .ros.discovery_info import ros_types_health
    from .ros.parameters import ParameterStore
    from .ros.rosout import RosoutLog
    from .ros.services import ServiceCaller
    from .ros.topics import SamplePool

    state = app[STATE]
    s = state.settings
    bridge = state.bridge or start_ros(s)  # cli.serve may have started it
    bridge.start(asyncio.get_running_loop())
    state.bridge = bridge
    state.pool = SamplePool(bridge, s["data.pool_cap"])
    state.cache = EntityCache(s["entity_cache.capacity"], HostInfo.local())
    discovery = state.discovery
    if discovery is not None:
        discovery.attach(state)  # the cache builds from the manifest; reload on file change
    state.poller = GraphPoller(bridge, state.pool, state.cache,
                               s["discovery.poll_interval_ms"] / 1000.0,
                               s["discovery.refresh_debounce_ms"] / 1000.0,
                               idle_interval_s=s["discovery.idle_poll_interval_ms"] / 1000.0,
                               watched_idle_interval_s=s[
                                   "discovery.watched_idle_poll_interval_ms"] / 1000.0)
    # types the gateway lacks: shell prefixes, build cache, service types built on discovery
    state.service_type_builds = typesources.start(bridge, s, state_directory(s["state_dir"]),
                                                  state.poller.graph_listeners, state.storage)
    empty = EmptyDomain(bridge.domain_id, domain_source(s["ros.domain_id"], os.environ),
                        aggregating=s["aggregation.enabled"])  # a primary may have none
    state.poller.graph_listeners.append(empty.graph)  # warns when the domain has no node
    state.health_warnings.append(empty.warnings)
    state.poller.start()
    empty_check = asyncio.create_task(empty.run(state.poller.ready))
    state.health["x-vendor-readiness"] = state.poller.health
    state.health["x-vendor-ros-types"] = ros_types_health(bridge)
    try:
        await asyncio.wait_for(state.poller.first.wait(), 10.0)
    except asyncio.TimeoutError:
        log.warning("no ROS graph snapshot within 10 s; serving an empty entity set")
    log.info("ROS domain %d: %d apps discovered", bridge.domain_id,
             len(state.cache.entities.apps))
    # operations, configurations, logs, status
    calls = ServiceCaller(bridge, s["operations.max_in_flight_per_service"],
                          s["ros.service_replies"], s["ros.service_client_idle_sec"])
    state.health["x-vendor-service-calls"] = calls.health
    state.service_caller = calls
    actions = state.actions = ActionManager(bridge, calls.limiter)
    state.parameters = ParameterStore(calls, s["parameter_service_timeout_sec"],
                                      s["parameter_negative_cache_sec"])
    rosout = state.rosout = RosoutLog(bridge, s["logs.buffer_size"])
    await rosout.start()
    try:
        async with feature_services(app):
            lag = LoopLag(loopslice.apply(s["server.loop_slice_us"]))  # after the threads start
            lag.start()  # how long the event loop is busy at a stretch (docs/performance.md)
            state.health["x-vendor-event-loop"] = lag.health
            gc_policy = GcPolicy()
            gc_policy.settle(s["server.gc_freeze"], s["server.gc_young_threshold"])
            state.health["x-vendor-gc"] = gc_policy.health
            try:
                yield
            finally:
                empty_check.cancel()
                gc_policy.close()
                await lag.stop()
    finally:
        await actions.close()
        calls.close()
        await rosout.stop()
        await state.poller.stop()
        if discovery is not None:
            await discovery.stop()
        # A DDS teardown deadlock here is bounded by the CLI's stop deadline (hardexit.py).
        bridge.close()
