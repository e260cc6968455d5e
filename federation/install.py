"""Aggregation wiring: the federation service, its forwarder and the mDNS announcer in the app."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from aiohttp import web

from gateway.faults.keys import FAULT_SERVICE
from gateway.http.state import GatewayState
from gateway.process.settings import ServerSettings

from .forward import Forwarder
from .relay import StreamRelay
from .service import FEDERATION, FederationService
from .settings import AggregationSettings, FederationSettings


def install(app: web.Application, state: GatewayState) -> FederationService | None:
    """Aggregation on: the federation service runs with the app (after ROS, stopped before).

    A robot that only announces itself (aggregation.announce without .enabled) runs mDNS
    alone: it serves its entity declaration to whichever primary finds it.
    """
    from .connect_out import install_connect_out

    install_connect_out(app, state)  # aggregation.connect_to: a robot joining by connecting out
    aggregation = state.settings.typed(AggregationSettings.from_settings)
    if not aggregation.enabled:
        if aggregation.announce:
            _install_announcer(app, state)
        return None
    service = FederationService(state)
    app[FEDERATION] = service
    state.aggregation = service  # the core's collection merges (http.resource_helpers)
    state.forward = Forwarder(service)  # the middleware's hook
    state.features.add("aggregation")
    state.health["peers"] = service.health
    if service.read_cache is not None:
        state.health["x-vendor-read-cache"] = service.read_cache.stats

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        service.attach(state.cache)
        await service.start()
        faults = app.get(FAULT_SERVICE)  # started before: the ROS side runs first
        stream = faults.stream if faults is not None else None
        if stream is not None:  # peers' fault events while a local client follows the stream
            stream.relay = StreamRelay(service.relay, service.no_fan_out)
        try:
            yield
        finally:
            if stream is not None:
                stream.relay = None
            await service.stop()

    app.cleanup_ctx.append(lifecycle)
    return service


def _install_announcer(app: web.Application, state: GatewayState) -> None:
    from .mdns import Mdns

    opts = state.settings.typed(FederationSettings.from_settings).mdns
    srv = state.settings.typed(ServerSettings.from_settings)
    announcer = Mdns(dataclasses.replace(opts, discover=False), srv.host, srv.port,
                     lambda name, url: None, _nothing)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        await announcer.start()
        try:
            yield
        finally:
            await announcer.stop()

    app.cleanup_ctx.append(lifecycle)


async def _nothing(name: str) -> None:
    return None
