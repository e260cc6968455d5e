"""Starting and stopping push delivery with the gateway (after ROS and the fault manager)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..faults.stream import SseSlots
from .engine import PushEngine
from .fault_engine import FaultTriggerEngine
from .publishers import LogTap, parameter_changed
from .sse import SseHub
from .topics import TopicWatch

if TYPE_CHECKING:
    from ..state import GatewayState

log = logging.getLogger(__name__)


async def start(state: GatewayState) -> None:
    """Create the SSE hub, the engines and the publishers; register the /health block."""
    from ..ros.param_events import ParameterEvents

    s = state.settings
    slots = state.sse_slots
    if slots is None:
        slots = state.sse_slots = SseSlots(s["sse.max_clients"])
    hub = SseHub(slots, s["sse.client_queue_size"], s["sse.keepalive_sec"])
    topics = TopicWatch(state)
    engine = PushEngine(state, hub, topics)
    engine.store.storage = state.storage  # a trigger that cannot be stored: 507, /health
    await engine.start()
    from ..http.resource_helpers import federation

    fed = federation(state)  # not federation.service_of: that imports the whole package
    if fed is not None:  # a primary: mixed entities also cover their members on peers
        from federation.push_links import PeerLinks

        engine.links = PeerLinks(engine, fed)
    faults = FaultTriggerEngine(state, topics)
    if faults.enabled:
        await faults.start()
        state.fault_triggers = faults
    state.push = engine
    rosout = state.rosout
    if rosout is not None:
        rosout.listener = LogTap(state)
    params = ParameterEvents(state.bridge, lambda node, names: parameter_changed(
        state, node, names))
    try:
        await params.start()
    except Exception:
        log.warning("no /parameter_events subscription: configuration changes are not "
                    "pushed", exc_info=True)
    state.parameter_events = params
    health = state.health
    health["x-vendor-push"] = lambda: {**engine.health(), "fault_triggers": faults.health(),
                                       **(engine.links.health() if engine.links else {})}


async def on_shutdown(state: GatewayState) -> None:
    """End every push stream so the server stops without waiting for clients."""
    engine = state.push
    if engine is not None:
        engine.end_streams()
        await engine.hub.close()


async def stop(state: GatewayState) -> None:
    """Stop the engines and publishers."""
    rosout = state.rosout
    if rosout is not None:
        rosout.listener = None
    params, state.parameter_events = state.parameter_events, None
    if params is not None:
        await params.stop()
    faults, state.fault_triggers = state.fault_triggers, None
    if faults is not None:
        await faults.stop()
    engine, state.push = state.push, None
    if engine is not None:
        if engine.links is not None:
            await engine.links.close()
        await engine.hub.close()
        await engine.stop()
