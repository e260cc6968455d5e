"""The gateway's shared state, reachable from every handler through one app key."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .config import Settings
from .events import EventBus
from .http.guard import Guard
from .http.routes import Registry, Route


@dataclass
class GatewayState:
    """Settings, registry, guard and the providers handlers read."""

    settings: Settings
    registry: Registry
    guard: Guard = field(default_factory=Guard)
    route_table: dict[Any, Route] = field(default_factory=dict)
    started_ns: int = field(default_factory=time.time_ns)
    bridge: Any = None  # ros.bridge.RosBridge
    pool: Any = None  # ros.topics.SamplePool
    cache: Any = None  # discovery.cache.EntityCache
    poller: Any = None  # discovery.poller.GraphPoller
    features: set[str] = field(default_factory=set)
    docs_route: Any = None  # the scoped /docs route (middleware sends `<item route>/docs` to it)
    extras: dict[str, Any] = field(default_factory=dict)
    events: EventBus = field(default_factory=EventBus)  # gateway/events.py

    @property
    def vendor(self) -> str:
        """The vendor word."""
        return self.settings.vendor

    @property
    def wire(self) -> Any:
        """The serializers of the configured wire profile (gateway/wire)."""
        wire = self.extras.get("wire")
        if wire is None:
            from .wire import make_wire

            wire = self.extras["wire"] = make_wire(self.settings["api.profile"], self.vendor)
        return wire

    @property
    def xv(self) -> str:
        """The vendor extension key, e.g. x-vendor."""
        return f"x-{self.settings.vendor}"


STATE: web.AppKey[GatewayState] = web.AppKey("gateway_state", GatewayState)


def state_of(request: web.Request) -> GatewayState:
    """The gateway state of a request's app."""
    return request.app[STATE]
