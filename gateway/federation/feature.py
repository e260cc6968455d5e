"""The federation as one feature service: a robot's connection out to its primary, its mDNS
announcer, and a primary's peers with their relay on the fault stream."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..faults.keys import FAULT_SERVICE
from ..http.state import GatewayState
from ..process.settings import ServerSettings
from .connect_out import connect_out
from .forward import Forwarder
from .relay import StreamRelay
from .service import FEDERATION, FederationService
from .settings import AggregationSettings, FederationSettings

if TYPE_CHECKING:
    from ..faults.service import FaultService
    from ..faults.stream import FaultStream
    from .mdns import Mdns


class Federation:
    """What the settings ask for, built with the app: connect-out (aggregation.connect_to);
    the peers (aggregation.enabled), or else the announcer alone (aggregation.announce), which
    serves this robot's entity declaration to whichever primary finds it."""

    def __init__(self, app: web.Application, state: GatewayState) -> None:
        self.state = state
        self.connect_out = connect_out(state)  # ConfigError: not served
        self.announcer: Mdns | None = None
        self.service: FederationService | None = None
        self.faults: FaultService | None = app.get(FAULT_SERVICE)  # make_app built it before
        self.stream: FaultStream | None = None  # the fault stream the peers' relay joined
        aggregation = state.settings.typed(AggregationSettings.from_settings)
        if aggregation.enabled:
            self.service = _serve_peers(app, state)
        elif aggregation.announce:
            self.announcer = _announcer(state)

    async def start(self) -> None:
        """Connect out; announce, or start the peers and relay their fault events."""
        if self.connect_out is not None:
            self.connect_out.start()
        try:
            if self.announcer is not None:
                await self.announcer.start()
            if self.service is not None:
                self.service.attach(self.state.cache)  # the cache serves the merged set
                await self.service.start()
                self._join_fault_stream(self.service)
        except BaseException:
            if self.connect_out is not None:  # a failed start leaves nothing running
                await self.connect_out.stop()
            raise

    def _join_fault_stream(self, service: FederationService) -> None:
        stream = self.faults.stream if self.faults is not None else None
        if stream is not None:  # peers' fault events while a local client follows the stream
            stream.relay = StreamRelay(service.relay, service.no_fan_out)
            self.stream = stream

    async def shutdown(self) -> None:
        """Nothing streams of its own: the relayed events end with the fault stream."""

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """None here: the peers' blocks were registered when it was built (their place)."""
        return {}

    async def stop(self) -> None:
        """In reverse: the relay leaves the fault stream, the peers or the announcer stop,
        then the connection out."""
        if self.stream is not None:
            self.stream.relay = None
            self.stream = None
        if self.service is not None:
            await self.service.stop()
        if self.announcer is not None:
            await self.announcer.stop()
        if self.connect_out is not None:
            await self.connect_out.stop()


def _serve_peers(app: web.Application, state: GatewayState) -> FederationService:
    """A primary's federation service, with its forwarder and /health blocks on the hub."""
    service = FederationService(state)
    app[FEDERATION] = service
    state.aggregation = service  # the core's collection merges (http.resource_helpers)
    state.forward = Forwarder(service)  # the middleware's hook
    state.features.add("aggregation")
    state.health["peers"] = service.health
    if service.read_cache is not None:
        state.health["x-vendor-read-cache"] = service.read_cache.stats
    return service


def _announcer(state: GatewayState) -> Mdns:
    from .mdns import Mdns  # noqa: PLC0415 - the only zeroconf importer

    opts = state.settings.typed(FederationSettings.from_settings).mdns
    srv = state.settings.typed(ServerSettings.from_settings)
    return Mdns(dataclasses.replace(opts, discover=False), srv.host, srv.port,
                lambda name, url: None, _nothing)


async def _nothing(name: str) -> None:
    return None
