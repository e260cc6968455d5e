"""make_app(): the aiohttp application, its ROS bridge and background tasks."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from aiohttp import web

from . import dashboard, mcp
from .auth import enforce
from .auth import routes as auth_routes
from .bulk_data import handlers as bulk_data
from .bulk_data.keys import BULK_DATA
from .bulk_data.service import BulkData
from .dashboard import page_stream
from .discovery.empty_domain import EmptyDomain, domain_source
from .discovery.keys import DISCOVERY
from .discovery.runtime import HostInfo
from .discovery.settings import DiscoverySettings, EntityCacheSettings
from .entities import handlers as entities
from .events import GRAPH
from .faults.keys import FAULT_SERVICE
from .faults.stream import SseSlots
from .federation import routes as federation_routes  # the peer entity declaration
from .federation.install import install as install_federation  # docs/federation.md
from .federation.peer_auth import check_settings as check_peer_settings
from .federation.settings import AggregationSettings
from .http import cors, ratelimit, resolve_cache
from .http.jsonutil import JSON_BODY_LIMIT, json_body_limit
from .http.lifecycle import FeatureService, run_features, shutdown_features
from .http.middleware import make_middleware
from .http.openapi import add_schemas
from .http.routes import Registry
from .http.settings import SseSettings
from .http.state import STATE, GatewayState
from .lifecycle.schemas import SCHEMAS as lifecycle_schemas
from .locks import handlers as locks
from .locks.schemas import SCHEMAS as lock_schemas
from .plugins.manager import PLUGINS, PluginManager
from .process import loopslice
from .process.gcpolicy import GcPolicy
from .process.looplag import LoopLag
from .process.settings import ProcessSettings, ServerSettings
from .process.storage import probe_loop
from .push import fault_trigger_handlers as fault_triggers
from .push.keys import PUSH_DELIVERY
from .push.settings import FaultTriggerSettings, TriggerSettings
from .scripts.schemas import SCHEMAS as script_schemas
from .server_info import unbuilt
from .settings.config import Settings
from .updates import handlers as updates
from .updates.feature import UPDATES, PluginsAndUpdates
from .updates.settings import UpdateSettings

if TYPE_CHECKING:
    from .ros.dds.bridge import RosBridge

log = logging.getLogger(__name__)

# An aiohttp cleanup context that starts the ROS side of the gateway (make_app's `ros`).
RosLifecycle = Callable[[web.Application], AsyncIterator[None]]


def build_registry(vendor: str, built: set[str], plugins: Any = None) -> Registry:
    """Every route of this build, in matching order; `built` receives the served features.

    `plugins` (a plugins.manager.PluginManager) adds the loaded plugins' routes.
    """
    from .configurations import (  # noqa: PLC0415 - rclpy loads on build, not on import
        handlers as configurations,
    )
    from .data import handlers as data  # noqa: PLC0415 - rclpy loads on build, not on import
    from .entities import manifest, status  # noqa: PLC0415 - rclpy loads on build, not on import
    from .faults import handlers as faults  # noqa: PLC0415 - rclpy loads on build, not on import
    from .lifecycle import (  # noqa: PLC0415 - gateway.ros (numpy) loads on build, not on import
        handlers as lifecycle,
    )
    from .logs import handlers as logs  # noqa: PLC0415 - rclpy loads on build, not on import
    from .operations import (  # noqa: PLC0415 - rclpy loads on build, not on import
        handlers as operations,
    )
    from .push import (  # noqa: PLC0415 - rclpy loads on build, not on import
        subscription_handlers as subscriptions,
    )
    from .push import (  # noqa: PLC0415 - rclpy loads on build, not on import
        trigger_handlers as triggers,
    )
    from .scripts import (  # noqa: PLC0415 - gateway.ros, re2 load on build, not on import
        handlers as scripts,
    )
    from .server_info import (  # noqa: PLC0415 - rclpy loads on build, not on import
        handlers as server,
    )

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
        from .plugins import dispatch  # noqa: PLC0415 - rclpy loads on build, not on import
        dispatch.install(reg, plugins)  # plugin-owned entities reach their plugin's providers
    return reg


def make_app(settings: Settings, ros: RosLifecycle | None = None,
             bridge: RosBridge | None = None) -> web.Application:
    """The gateway application; ROS starts with the app and stops with it.

    `ros`: the cleanup context that attaches the ROS side (bridge, pool, cache, poller and the
    services over them); the real one by default (over `bridge` when cli.serve started it), a
    fake robot's in the in-process tests. Each feature's service is built here under its app
    key and started by `feature_services` once the ROS side runs.
    """
    built: set[str] = set()
    plugins = PluginManager(settings)  # a plugin that fails to load is a /health warning
    state = GatewayState(settings=settings,
                         registry=build_registry(settings.vendor, built, plugins))
    state.features = built
    if settings.typed(UpdateSettings.from_settings).enabled \
            and plugins.provider("updates") is not None:
        state.features.add("updates")
    for enabled, feature in ((settings.typed(TriggerSettings.from_settings).enabled, "triggers"),
                             (settings.typed(FaultTriggerSettings.from_settings).enabled,
                              "fault-triggers")):
        if not enabled:  # routes answer 501; root capability and detail links off
            state.features.discard(feature)
    app = web.Application(client_max_size=16 * 1024 * 1024)
    app[STATE] = state
    app[JSON_BODY_LIMIT] = json_body_limit(settings)
    app[PLUGINS] = plugins
    over_ros = _build_features(app, state, plugins)
    state.route_table = state.registry.install(app)
    resolve_cache.install(app)  # hot paths resolve by one lookup (docs/performance.md)
    state.docs_route = next(r for r in state.registry if r.path == "/{entity_path}/docs")
    app.middlewares.append(make_middleware(state))
    # Security (docs/security.md): each inserts an outer middleware, so CORS ends outermost.
    enforce.install(app, state)
    ratelimit.install(app, state, app[enforce.AUTH].peek)
    cors.install(app, state)
    dashboard.install(app, state)  # GET / and /dashboard/* (docs/dashboard.md)
    mcp.install(app, state)  # /mcp: the MCP server, SDK loaded on first use (docs/mcp.md)
    if settings.typed(ServerSettings.from_settings).tls_enabled:
        state.features.add("tls")
    check_peer_settings(settings)
    if settings.typed(DiscoverySettings.from_settings).mode != "runtime_only":  # docs/manifest.md
        from .discovery.pipeline import (  # noqa: PLC0415 - re2 (manifests) only when one is set
            ManifestDiscovery,
        )
        app[DISCOVERY] = ManifestDiscovery(settings)  # ManifestError: not served
    app.cleanup_ctx.append(_storage_probe)  # a failing store recovers by itself
    app.cleanup_ctx.append(ros or _ros_lifecycle(bridge))
    from .lifecycle import (  # noqa: PLC0415 - gateway.ros (numpy) loads on build, not on import
        handlers as lifecycle,
    )
    from .scripts import (  # noqa: PLC0415 - gateway.ros, re2 load on build, not on import
        handlers as scripts,
    )
    for module in (locks, scripts, lifecycle):
        module.install(app, state)
    _declare_order(app, (*over_ros, app[locks.LOCK_SERVICE], app[scripts.SCRIPT_SERVICE],
                         app[lifecycle.LIFECYCLE], *install_federation(app, state)))
    if plugins.provider("scripts") is not None:  # a plugin backend serves its entities' scripts
        state.features.add("scripts")
    return app


async def _storage_probe(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.ensure_future(probe_loop(app[STATE].storage))
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


# The feature services in their start order (stopped in reverse): uploads and the recorder
# (it hears fault changes on the bus) before the faults; the plugins (and the update manager
# over a plugin's provider); push delivery (subscriptions, triggers, fault triggers) after the
# faults, whose database its trigger store sits beside; then the lock sweep, the script runner
# and lifecycle control; last the federation (peers, their relay on the fault stream, mDNS,
# connect-out), which stops first.
FEATURE_SERVICES: web.AppKey[tuple[FeatureService, ...]] = web.AppKey("feature_services")


def _build_features(app: web.Application, state: GatewayState, plugins: PluginManager
                    ) -> tuple[FeatureService, ...]:
    """The services over the ROS side, each under its app key, in their start order."""
    from .faults.service import FaultService  # noqa: PLC0415 - rclpy loads on build, not on import
    from .logs.configs import (  # noqa: PLC0415 - rclpy loads on build, not on import
        LOG_CONFIGURATIONS,
        LogConfigurations,
    )
    from .push.service import PushDelivery  # noqa: PLC0415 - rclpy loads on build, not on import

    slots = SseSlots(state.settings.typed(SseSettings.from_settings).max_clients)
    faults = app[FAULT_SERVICE] = FaultService(state, slots)  # slots shared with push streams
    faults.hooks.entity_sources.append(plugins.fault_sources)  # docs/plugins.md
    bulk = app[BULK_DATA] = BulkData(state, faults)
    updates = app[UPDATES] = PluginsAndUpdates(state, app, plugins)
    logs = app[LOG_CONFIGURATIONS] = LogConfigurations()
    push = app[PUSH_DELIVERY] = PushDelivery(state, faults, logs)
    return bulk, faults, updates, push


def _declare_order(app: web.Application, services: tuple[FeatureService, ...]) -> None:
    """The feature services' one order: started by feature_services, streams ended first."""
    app[FEATURE_SERVICES] = services

    async def shutdown(_app: web.Application) -> None:
        await shutdown_features(services)  # open streams end before the server stops

    app.on_shutdown.append(shutdown)


def feature_services(app: web.Application) -> AbstractAsyncContextManager[None]:
    """Start the feature services in their declared order, stop them in reverse. The real ROS
    lifecycle and the in-process tests' fake one both run it."""
    services: tuple[FeatureService, ...] = app[FEATURE_SERVICES]
    return run_features(services, app[STATE].health)


def _ros_lifecycle(prestarted: RosBridge | None) -> RosLifecycle:
    """The ROS side's cleanup context: over `prestarted` (cli.serve's) or a new bridge."""
    return functools.partial(_ros_side, prestarted=prestarted)


async def _ros_side(app: web.Application, prestarted: RosBridge | None) -> AsyncIterator[None]:
    from .discovery.cache import (  # noqa: PLC0415 - gateway.ros: with the ROS side
        EntityCache,
    )
    from .discovery.poller import (  # noqa: PLC0415 - rclpy: with the ROS side
        GraphPoller,
    )
    from .operations.handlers import state_directory  # noqa: PLC0415 - rclpy: with the ROS side
    from .ros.calls.actions import (  # noqa: PLC0415 - rclpy: with the ROS side
        ActionManager,
    )
    from .ros.calls.parameters import ParameterStore  # noqa: PLC0415 - rclpy: with the ROS side
    from .ros.calls.services import ServiceCaller  # noqa: PLC0415 - rclpy: with the ROS side
    from .ros.dds.bridge import (  # noqa: PLC0415 - rclpy: with the ROS side
        start_ros,
    )
    from .ros.graph.discovery_info import (  # noqa: PLC0415 - gateway.ros: with the ROS side
        ros_types_health,
    )
    from .ros.interfaces import (  # noqa: PLC0415 - rclpy: with the ROS side
        typesources,
    )
    from .ros.settings import (  # noqa: PLC0415 - gateway.ros: with the ROS side
        RosServiceSettings,
        RosSettings,
    )
    from .ros.topics.pool import (  # noqa: PLC0415 - rclpy: with the ROS side
        SamplePool,
    )
    from .ros.topics.rosout import (  # noqa: PLC0415 - rclpy: with the ROS side
        RosoutLog,
    )

    state = app[STATE]
    s = state.settings
    ros, sizes = s.typed(RosSettings.from_settings), s.typed(RosServiceSettings.from_settings)
    found, server = s.typed(DiscoverySettings.from_settings), s.typed(ServerSettings.from_settings)
    bridge = prestarted or start_ros(s)  # cli.serve may have started it
    bridge.start(asyncio.get_running_loop())
    pool = SamplePool(bridge, sizes.data_pool_cap)
    # each rebuilt entity set is announced on the bus (ENTITIES)
    cache = EntityCache(s.typed(EntityCacheSettings.from_settings).capacity, HostInfo.local(),
                        state.events)
    discovery = app.get(DISCOVERY)
    if discovery is not None:  # the cache builds from the manifest; reload on file change
        discovery.attach(cache, state.events)
    poller = GraphPoller(bridge, pool, cache, found.poll_interval_ms / 1000.0,
                         found.refresh_debounce_ms / 1000.0,
                         idle_interval_s=found.idle_poll_interval_ms / 1000.0,
                         watched_idle_interval_s=found.watched_idle_poll_interval_ms / 1000.0,
                         bus=state.events)
    # operations, configurations, logs, status
    calls = ServiceCaller(bridge, sizes.operations_max_in_flight_per_service,
                          ros.service_replies, ros.service_client_idle_sec)
    actions = ActionManager(bridge, calls.limiter)
    parameters = ParameterStore(calls, sizes.parameter_service_timeout_sec,
                                sizes.parameter_negative_cache_sec)
    rosout = RosoutLog(bridge, sizes.logs_buffer_size)
    rosout.publish_records(state.events)  # log triggers hear records on the bus (LOGS)
    state.attach_ros(bridge, pool, cache, poller, calls, actions, parameters, rosout)
    # types the gateway lacks: shell prefixes, build cache, service types built on discovery
    state_dir = state_directory(s.typed(ProcessSettings.from_settings).state_dir)
    state.service_type_builds = typesources.start(bridge, s, state_dir, state.events,
                                                  state.storage)
    aggregating = s.typed(AggregationSettings.from_settings).enabled  # a primary may have none
    empty = EmptyDomain(bridge.domain_id, domain_source(ros.domain_id, os.environ),
                        aggregating=aggregating)
    # warns when the domain has no node
    state.events.subscribe([GRAPH], lambda event: empty.graph(event.payload.snapshot))
    state.health_warnings.append(empty.warnings)
    poller.start()
    empty_check = asyncio.create_task(empty.run(poller.ready))
    state.health["x-vendor-readiness"] = poller.health
    state.health["x-vendor-ros-types"] = ros_types_health(bridge)
    try:
        await asyncio.wait_for(poller.first.wait(), 10.0)
    except asyncio.TimeoutError:
        log.warning("no ROS graph snapshot within 10 s; serving an empty entity set")
    log.info("ROS domain %d: %d apps discovered", bridge.domain_id,
             len(cache.entities.apps))
    state.health["x-vendor-service-calls"] = calls.health
    state.health_warnings.append(actions.warnings)  # an action with two servers
    await rosout.start()
    try:
        async with feature_services(app):
            lag = LoopLag(loopslice.apply(server.loop_slice_us))  # after the threads start
            lag.start()  # how long the event loop is busy at a stretch (docs/performance.md)
            state.health["x-vendor-event-loop"] = lag.health
            gc_policy = GcPolicy()
            gc_policy.settle(server.gc_freeze, server.gc_young_threshold)
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
        rosout.publish_records(None)
        await rosout.stop()
        await poller.stop()
        if discovery is not None:
            await discovery.stop()
        # A DDS teardown deadlock here is bounded by the CLI's stop deadline (hardexit.py).
        bridge.close()
