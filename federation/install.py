"""Aggregation wiring: the federation service, its forwarder and the mDNS announcer in the app."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from aiohttp import web

from gateway.state import GatewayState

from .forward import Forwarder
from .service import FederationService
from .settings import FederationSettings


def install(app: web.Application, state: GatewayState) -> FederationService | None:
    """Aggregation on: the federation service runs with the app (after ROS, stopped before).

    A robot that only announces itself (aggregation.announce without .enabled) runs mDNS
    alone: it serves its entity declaration to whichever primary finds it.
    """
    from .connect_out import install_connect_out

    install_connect_out(app, state)  # aggregation.connect_to: a robot joining by connecting out
    if not state.settings["aggregation.enabled"]:
        if state.settings["aggregation.announce"]:
            _install_announcer(app, state)
        return None
    service = FederationService(state)
    state.federation = service
    state.forwarder = Forwarder(service)
    state.features.add("aggregation")
    state.health["peers"] = service.health
    if service.read_cache is not None:
        state.health["x-vendor-read-cache"] = service.read_cache.stats

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        service.attach(state.cache)
        await service.start()
        try:
            yield
        finally:
            await service.stop()

    app.cleanup_ctx.append(lifecycle)
    return service


def _install_announcer(app: web.Application, state: GatewayState) -> None:
    from .mdns import Mdns

    opts = FederationSettings.from_settings(state.settings).mdns
    announcer = Mdns(dataclasses.replace(opts, discover=False), state.settings["server.host"],
                     state.settings["server.port"], lambda name, url: None, _nothing)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        await announcer.start()
        try:
            yield
        finally:
            await announcer.stop()

    app.cleanup_ctx.append(lifecycle)


async def _nothing(name: str) -> None:
    return None
