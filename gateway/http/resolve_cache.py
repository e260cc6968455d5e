"""Route resolution remembered by (method, path): a hot GET skips the linear route scan."""

from __future__ import annotations

from typing import cast

from aiohttp import web
from aiohttp.web_urldispatcher import UrlDispatcher, UrlMappingMatchInfo

MAX_PATHS = 4096


class CachingDispatcher(UrlDispatcher):
    """aiohttp's dispatcher, plus a bounded map of successful matches (the table is frozen)."""

    _matches: dict[tuple[str, str], tuple[dict[str, str], web.AbstractRoute]]

    async def resolve(self, request: web.Request) -> UrlMappingMatchInfo:
        """The same answer as UrlDispatcher.resolve; a known (method, path) costs one lookup."""
        key = (request.method, request.rel_url.path_safe)
        hit = self._matches.get(key)
        if hit is not None:
            return UrlMappingMatchInfo(dict(hit[0]), hit[1])
        info = await super().resolve(request)
        if type(info) is UrlMappingMatchInfo:  # not MatchInfoError (404/405): never cached
            if len(self._matches) >= MAX_PATHS:
                self._matches.clear()
            self._matches[key] = (dict(info), info.route)
        return info


def install(app: web.Application) -> None:
    """Make the app's router a CachingDispatcher (same object, same routes)."""
    router = app.router
    router.__class__ = CachingDispatcher
    cast(CachingDispatcher, router)._matches = {}  # its class set above
