"""The lifecycle feature's service under its app key: the built-in provider, made on its first
use, and the latest transition of each app (read by the status handler)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from ..http.state import GatewayState
from ..ros.settings import RosServiceSettings
from .provider import LifecycleProvider


class LifecycleControl:
    """The built-in provider, made on its first use (it calls over the running ROS side)."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state
        self.made: LifecycleProvider | None = None

    def provider(self) -> LifecycleProvider:
        """The provider, made now if no request needed it before."""
        prov = self.made
        if prov is None:
            s = self.state.settings
            prov = self.made = LifecycleProvider(
                self.state.service_caller,
                s.typed(RosServiceSettings.from_settings).service_call_timeout_sec)
        return prov

    def latest(self, app_id: str) -> dict[str, Any] | None:
        """The latest transition of an app, for its status body (None when never requested)."""
        record = self.made.records.get(app_id) if self.made is not None else None
        return record.body() if record is not None else None

    async def start(self) -> None:
        """Nothing to start: the provider is made on first use."""

    async def shutdown(self) -> None:
        """Nothing streams."""

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """No /health block."""
        return {}

    async def stop(self) -> None:
        """Cancel running transitions."""
        if self.made is not None:
            await self.made.close()


LIFECYCLE: web.AppKey[LifecycleControl] = web.AppKey("lifecycle", LifecycleControl)
