"""Starting and stopping push delivery with the gateway (after ROS and the fault manager)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..federation.push_links import PeerLinks
from ..http.resource_helpers import federation
from ..http.settings import SseSettings
from ..ros.calls.param_events import ParameterEvents
from .engine import PushEngine
from .fault_engine import FaultTriggerEngine
from .publishers import parameter_changed
from .sse import SseHub
from .topics import TopicWatch

if TYPE_CHECKING:
    from ..faults.service import FaultService
    from ..http.state import GatewayState
    from ..logs.configs import LogConfigurations
    from ..model.entities import Entity

log = logging.getLogger(__name__)


class PushDelivery:
    """Push delivery: the SSE hub and both engines, built with the app and started over the
    running ROS side after the fault manager (their trigger store sits beside its database)."""

    def __init__(self, state: GatewayState, faults: FaultService,
                 log_configs: LogConfigurations) -> None:
        self.state, self.faults, self.log_configs = state, faults, log_configs
        # `x-` collections plugins serve to cyclic subscriptions: name -> sampler
        self.collections: dict[str, Callable[[Any, Entity], Any]] = {}
        sse = state.settings.typed(SseSettings.from_settings)
        topics = TopicWatch(state)
        self.engine = PushEngine(state, SseHub(faults.slots, sse.client_queue_size,
                                               sse.keepalive_sec), topics, self)
        self.fault_triggers = FaultTriggerEngine(state, topics, faults)  # when enabled
        self.parameter_events: ParameterEvents | None = None  # made over the running bridge

    async def start(self) -> None:
        """Start the engines and the publishers."""
        state, engine = self.state, self.engine
        await engine.start()  # a trigger that cannot be stored: 507, /health

        fed = federation(state)  # not federation.service_of: that imports the whole package
        if fed is not None:  # a primary: mixed entities also cover their members on peers
            engine.links = PeerLinks(engine, fed)
        if self.fault_triggers.enabled:
            await self.fault_triggers.start()
        params = ParameterEvents(state.bridge, lambda node, names: parameter_changed(
            state, node, names))
        try:
            await params.start()
        except Exception:
            log.warning("no /parameter_events subscription: configuration changes are not "
                        "pushed", exc_info=True)
        self.parameter_events = params

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """The x-vendor-push block of /health (fault triggers and peer links included)."""
        engine, faults = self.engine, self.fault_triggers
        return {"x-vendor-push": lambda: {
            **engine.health(), "fault_triggers": faults.health(),
            **(engine.links.health() if engine.links else {})}}

    async def shutdown(self) -> None:
        """End every push stream so the server stops without waiting for clients."""
        self.engine.end_streams()
        await self.engine.hub.close()

    async def stop(self) -> None:
        """Stop the engines and publishers."""
        params, self.parameter_events = self.parameter_events, None
        if params is not None:
            await params.stop()
        await self.fault_triggers.stop()  # nothing to stop when it did not start
        engine = self.engine
        if engine.links is not None:
            await engine.links.close()
        await engine.hub.close()
        await engine.stop()

