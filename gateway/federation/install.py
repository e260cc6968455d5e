"""The federation feature in the app: built only when a setting asks for it, so a gateway
without one imports none of its I/O modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .settings import AggregationSettings

if TYPE_CHECKING:
    from aiohttp import web

    from ..http.lifecycle import FeatureService
    from ..http.state import GatewayState


def install(app: web.Application, state: GatewayState) -> tuple[FeatureService, ...]:
    """The federation's feature service (feature.py) when aggregation.enabled, .announce or
    .connect_to is set, else none; the app starts it after the ROS side (docs/federation.md)."""
    aggregation = state.settings.typed(AggregationSettings.from_settings)
    if not (aggregation.enabled or aggregation.announce or aggregation.connect_to):
        return ()
    from .feature import Federation  # noqa: PLC0415 - only when federation is on

    return (Federation(app, state),)
