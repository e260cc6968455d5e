"""The gateway's shared state, reachable from every handler through one app key."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .events import EventBus
from .http.drain import Drain
from .http.guard import Guard
from .http.routes import Registry, Route
from .process.storage import StorageHealth
from .settings.config import Settings

if TYPE_CHECKING:  # the services' types; their modules import this one
    from federation.forward import Forwarder
    from federation.service import FederationService
    from recorder.service import Recorder
    from recorder.uploads import UploadStore

    from .auth.enforce import AuthRuntime
    from .discovery.cache import EntityCache
    from .discovery.pipeline import ManifestDiscovery
    from .discovery.poller import GraphPoller
    from .faults.service import FaultService
    from .faults.stream import SseSlots
    from .http.hot import HotAnswers, Run
    from .lifecycle.provider import LifecycleProvider
    from .locks.guard import LockService
    from .model.entities import Entity
    from .plugins.manager import PluginManager
    from .push.engine import PushEngine
    from .push.fault_engine import FaultTriggerEngine
    from .ros.actions import ActionManager
    from .ros.bridge import RosBridge
    from .ros.callbuild import ServiceTypeBuilds
    from .ros.described import DescribedTypes
    from .ros.param_events import ParameterEvents
    from .ros.parameters import ParameterStore
    from .ros.rosout import RosoutLog
    from .ros.services import ServiceCaller
    from .ros.topics import SamplePool
    from .scripts.service import ScriptService
    from .updates.manager import UpdateManager
    from .wire_bundle import Wire

# A fault-clear hook: (request, fault_code, sources) -> True when the clear may proceed.
ClearFilter = Callable[[web.Request, str, list[str]], bool]


@dataclass
class GatewayState:
    """Settings, registry, guard and the providers handlers read."""

    settings: Settings
    registry: Registry
    guard: Guard = field(default_factory=Guard)
    route_table: dict[Any, Route] = field(default_factory=dict)
    started_ns: int = field(default_factory=time.time_ns)
    # Set by the ROS lifecycle (app._ros_lifecycle) before the app serves a request.
    bridge: RosBridge = None  # type: ignore[assignment]
    pool: SamplePool = None  # type: ignore[assignment]
    cache: EntityCache = None  # type: ignore[assignment]
    poller: GraphPoller = None  # type: ignore[assignment]
    features: set[str] = field(default_factory=set)
    docs_route: Any = None  # the scoped /docs route (middleware sends `<item route>/docs` to it)
    events: EventBus = field(default_factory=EventBus)  # gateway/events.py
    # Services: None while their feature is off or before the ROS lifecycle started them.
    plugins: PluginManager | None = None  # make_app
    discovery: ManifestDiscovery | None = None  # manifest-backed discovery modes
    updates: UpdateManager | None = None  # an update provider plugin is loaded
    service_caller: ServiceCaller | None = None
    actions: ActionManager | None = None
    parameters: ParameterStore | None = None
    rosout: RosoutLog | None = None
    faults: FaultService | None = None
    uploads: UploadStore | None = None
    recorder: Recorder | None = None  # bulk_data.recorder.enabled
    push: PushEngine | None = None
    fault_triggers: FaultTriggerEngine | None = None  # fault_triggers.enabled
    parameter_events: ParameterEvents | None = None
    sse_slots: SseSlots | None = None  # shared by fault streams and push streams
    locks: LockService | None = None
    scripts: ScriptService | None = None
    lifecycle: LifecycleProvider | None = None
    auth: AuthRuntime | None = None
    federation: FederationService | None = None  # aggregation on
    forwarder: Forwarder | None = None  # aggregation on
    drain: Drain = field(default_factory=Drain)  # bounded stop (cli.serve)
    storage: StorageHealth = field(default_factory=StorageHealth)  # stores report write failures
    hot_answers: HotAnswers | None = None  # the fast path of known GETs (http/hot.py)
    hot_run: Run | None = None  # the middleware's runner of a fast-path call
    # Hooks and registries other modules add to.
    health: dict[str, Callable[[], Any]] = field(default_factory=dict)  # /health blocks
    health_warnings: list[Callable[[], list[dict[str, Any]]]] = field(default_factory=list)
    fault_listeners: list[Callable[[Any, bool], None]] = field(default_factory=list)
    fault_clear_filters: list[ClearFilter] = field(default_factory=list)
    fault_snapshot_providers: list[Callable[[GatewayState, Entity, Any], list[dict[str, Any]]]] \
        = field(default_factory=list)
    push_collections: dict[str, Callable[[Any, Entity], Any]] = field(default_factory=dict)
    # The manifest's per-entity `lock` block ({required_scopes, breakable, max_expiration}).
    lock_entity_config: Callable[[str, str], dict[str, Any] | None] | None = None
    script_definitions: Callable[[], list[Any]] | None = None  # manifest `scripts` block
    # Caches of derived values.
    log_configuration: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # entity generation, node fqn -> app id (faults/upkeep.py)
    fault_entity_index: tuple[int, dict[str, str]] = field(default_factory=lambda: (-1, {}))
    openapi: dict[str, Any] | None = None  # the served OpenAPI document, built on first use
    described_types: DescribedTypes | None = None  # made on first use
    service_type_builds: ServiceTypeBuilds | None = None  # made on first use
    wire_cache: Wire | None = None

    @property
    def vendor(self) -> str:
        """The vendor word."""
        return self.settings.vendor

    @property
    def wire(self) -> Wire:
        """The serializers of the configured wire profile (gateway/wire)."""
        wire = self.wire_cache
        if wire is None:
            from .wire_bundle import make_wire

            wire = self.wire_cache = make_wire(self.settings["api.profile"], self.vendor)
        return wire

    @property
    def xv(self) -> str:
        """The vendor extension key, e.g. x-vendor."""
        return f"x-{self.settings.vendor}"


STATE: web.AppKey[GatewayState] = web.AppKey("gateway_state", GatewayState)


def state_of(request: web.Request) -> GatewayState:
    """The gateway state of a request's app."""
    return request.app[STATE]
