"""The plugins and the update manager over an update provider plugin, started with the app."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..plugins.manager import PluginManager
from .manager import UpdateManager
from .settings import UpdateSettings

if TYPE_CHECKING:
    from ..http.state import GatewayState


class PluginsAndUpdates:
    """Starts the plugins, then the update manager when a provider plugin loaded."""

    def __init__(self, state: GatewayState, app: web.Application,
                 plugins: PluginManager) -> None:
        self.state, self.app, self.plugins = state, app, plugins
        self.manager: UpdateManager | None = None  # updates.enabled and a provider loaded

    async def start(self) -> None:
        """Start the plugins; make the update manager over the provider plugin's calls."""
        await self.plugins.start(self.state, self.app)
        found = self.plugins.provider("updates")
        settings = self.state.settings.typed(UpdateSettings.from_settings)
        if settings.enabled and found is not None:
            loaded, provider = found
            self.manager = UpdateManager(self.state, provider,
                                         self.plugins.caller(loaded.name),
                                         settings.operation_timeout_sec)

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """None here: the plugin manager adds its block when it starts (plugins add theirs)."""
        return {}

    async def shutdown(self) -> None:
        """Nothing streams."""

    async def stop(self) -> None:
        """Cancel running update operations, then stop the plugins."""
        manager, self.manager = self.manager, None
        if manager is not None:
            await manager.close()
        await self.plugins.stop()


UPDATES: web.AppKey[PluginsAndUpdates] = web.AppKey("updates", PluginsAndUpdates)
