"""The hub: the gateway's core collaborators, reachable from every handler through one app key.

A feature's service is not here: it lives under a typed app key in the feature's own package
(`faults.keys.FAULT_SERVICE`, `locks.guard.LOCK_SERVICE`, ...), built in `app.make_app` and
started by the app's feature lifecycle (`gateway/http/lifecycle.py`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from aiohttp import web

from ..events import EventBus
from ..process.storage import StorageHealth
from ..settings.config import Settings
from ..wire.core import CoreWire, make_core_wire
from ..wire.settings import ApiSettings
from .drain import Drain
from .guard import Guard
from .routes import Registry, Route

if TYPE_CHECKING:  # the ROS side's types (core, lower ranks) and the fast path's
    from ..discovery.cache import EntityCache
    from ..discovery.poller import GraphPoller
    from ..ros.calls.actions import ActionManager
    from ..ros.calls.callbuild import ServiceTypeBuilds
    from ..ros.calls.parameters import ParameterStore
    from ..ros.calls.services import ServiceCaller
    from ..ros.dds.bridge import RosBridge
    from ..ros.interfaces.described import DescribedTypes
    from ..ros.topics.pool import SamplePool
    from ..ros.topics.rosout import RosoutLog
    from .hot import HotAnswers, Run

T = TypeVar("T")


class Forward(Protocol):
    """The middleware's forwarding hook: a peer's answer for a request it owns, else None."""

    def __call__(self, request: web.Request, route: Route) -> Awaitable[web.StreamResponse | None]:
        """The owning peer's answer, or None when this gateway answers itself."""
        ...

    def forwards_nothing(self) -> bool:
        """True while no request goes to a peer (the fast paths stay open)."""
        ...


@dataclass
class GatewayState:
    """Settings, routes, guard, drain, the event bus, health hooks and the ROS side."""

    settings: Settings
    registry: Registry
    guard: Guard = field(default_factory=Guard)
    route_table: dict[Any, Route] = field(default_factory=dict)
    started_ns: int = field(default_factory=time.time_ns)
    features: set[str] = field(default_factory=set)
    docs_route: Any = None  # the scoped /docs route (middleware sends `<item route>/docs` to it)
    events: EventBus = field(default_factory=EventBus)  # gateway/events.py
    drain: Drain = field(default_factory=Drain)  # bounded stop (cli.serve)
    storage: StorageHealth = field(default_factory=StorageHealth)  # stores report write failures
    hot_answers: HotAnswers | None = None  # the fast path of known GETs (http/hot.py)
    hot_run: Run | None = None  # the middleware's runner of a fast-path call
    # Hooks a feature fills (the core never imports a feature).
    health: dict[str, Callable[[], Any]] = field(default_factory=dict)  # /health blocks
    health_warnings: list[Callable[[], list[dict[str, Any]]]] = field(default_factory=list)
    forward: Forward | None = None  # federation's forwarder on an aggregating gateway
    # federation's service on an aggregating gateway (federation/feature.py): the merge of
    # collections read through http.resource_helpers.federation
    aggregation: Any = None
    # Caches of derived values.
    openapi: dict[str, Any] | None = None  # the served OpenAPI document, built on first use
    described_types: DescribedTypes | None = None  # made on first use
    service_type_builds: ServiceTypeBuilds | None = None  # made on first use
    _serializers: dict[int, Any] = field(default_factory=dict, repr=False)
    _wire: CoreWire | None = field(default=None, repr=False)
    # The ROS side: set together by attach_ros when the app starts, before it serves.
    bridge: RosBridge = field(init=False, repr=False)
    pool: SamplePool = field(init=False, repr=False)
    cache: EntityCache = field(init=False, repr=False)
    poller: GraphPoller = field(init=False, repr=False)
    service_caller: ServiceCaller = field(init=False, repr=False)
    actions: ActionManager = field(init=False, repr=False)
    parameters: ParameterStore = field(init=False, repr=False)
    rosout: RosoutLog = field(init=False, repr=False)

    def attach_ros(self, bridge: RosBridge, pool: SamplePool, cache: EntityCache,
                   poller: GraphPoller, service_caller: ServiceCaller, actions: ActionManager,
                   parameters: ParameterStore, rosout: RosoutLog) -> None:
        """Attach the started ROS side (app._ros_lifecycle, or a test's fake robot)."""
        self.bridge, self.pool, self.cache, self.poller = bridge, pool, cache, poller
        self.service_caller, self.actions = service_caller, actions
        self.parameters, self.rosout = parameters, rosout

    @property
    def vendor(self) -> str:
        """The vendor word."""
        return self.settings.vendor

    @property
    def xv(self) -> str:
        """The vendor extension key, e.g. x-vendor."""
        return f"x-{self.settings.vendor}"

    @property
    def wire(self) -> CoreWire:
        """The core serializers of the configured wire profile (gateway/wire)."""
        wire = self._wire
        if wire is None:
            profile = self.settings.typed(ApiSettings.from_settings).profile
            wire = self._wire = make_core_wire(profile, self.vendor)
        return wire

    def serializer(self, table: Mapping[str, Callable[[str], T]]) -> T:
        """The configured profile's serializer from a feature's table (e.g. faults.wire.FAULTS),
        made once."""
        found: T | None = self._serializers.get(id(table))
        if found is None:
            found = self._serializers[id(table)] = table[self.wire.profile](self.xv)
        return found


STATE: web.AppKey[GatewayState] = web.AppKey("gateway_state", GatewayState)


def state_of(request: web.Request) -> GatewayState:
    """The gateway state of a request's app."""
    return request.app[STATE]
