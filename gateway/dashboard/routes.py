"""GET / and /dashboard/{file}: the dashboard's files, outside the API's route registry.

They are plain aiohttp routes, not registry rows: they are not part of the API (no /docs
entry, no role), and being routed they pass the auth check for unrouted paths; the page's
own API calls carry the token the sign-in form obtained.
"""

from __future__ import annotations

from aiohttp import web

from ..http.state import GatewayState
from .assets import Asset, load, not_modified
from .settings import DashboardSettings

PREFIX = "/dashboard/"
# Same-origin only: scripts and styles from these files, API calls to this gateway.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; "
                               "connect-src 'self'; style-src 'self'; script-src 'self'; "
                               "object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _serve(asset: Asset, request: web.Request) -> web.Response:
    headers = {"ETag": asset.etag, "Cache-Control": "no-cache", **SECURITY_HEADERS}
    if not_modified(asset, request.headers.get("If-None-Match")):
        return web.Response(status=304, headers=headers)
    resp = web.Response(body=asset.body, headers=headers)
    resp.content_type = asset.content_type.split(";")[0]
    if "charset" in asset.content_type:
        resp.charset = "utf-8"
    if len(asset.body) > 1024 and "text" in asset.content_type:
        resp.enable_compression()
    return resp


def install(app: web.Application, state: GatewayState) -> None:
    """Serve the dashboard at / when `dashboard.enabled` (the default)."""
    if not state.settings.typed(DashboardSettings.from_settings).enabled:
        return
    loaded: dict[str, Asset] = {}

    def assets() -> dict[str, Asset]:
        """The shipped files, read on the first dashboard request (not held until then)."""
        if not loaded:
            loaded.update(load())
        return loaded

    async def page(request: web.Request) -> web.Response:
        """The dashboard page."""
        return _serve(assets()["index.html"], request)

    async def static(request: web.Request) -> web.Response:
        """One dashboard file; 404 for anything not shipped in the package."""
        asset = assets().get(request.match_info["name"])
        if asset is None:
            raise web.HTTPNotFound(reason=f"No dashboard file {request.match_info['name']}")
        return _serve(asset, request)

    app.router.add_get("/", page)
    app.router.add_get(PREFIX + "{name:.+}", static)
    state.features.add("dashboard")
