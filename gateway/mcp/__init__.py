"""The built-in Model Context Protocol server (docs/mcp.md): `/mcp` and `diag-gateway mcp`.

Importing this package does not import the MCP SDK: the gateway loads it on the first
`/mcp` request (and the stdio bridge when it starts).
"""

from __future__ import annotations

from aiohttp import web

from ..auth.enforce import AUTH
from ..bulk_data.keys import BULK_DATA
from ..http.state import GatewayState
from .service import PATH, McpService
from .settings import McpSettings

__all__ = ["install"]


def install(app: web.Application, state: GatewayState) -> None:
    """Route /mcp when `mcp.enabled` (the default); the SDK loads on its first request."""
    if not state.settings.typed(McpSettings.from_settings).enabled:
        return

    service = McpService(state, app.get(AUTH), app.get(BULK_DATA))
    # POST only: the transport is stateless, so there is no session to DELETE and no
    # server-initiated stream to GET (the router answers both 405, as the MCP spec allows).
    app.router.add_post(PATH, service.handle)

    async def close(_app: web.Application) -> None:
        await service.close()

    app.on_cleanup.append(close)
    state.features.add("mcp")
