"""The route registry: one table drives routing, the write guard and the OpenAPI document."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ..model.entities import ENTITY_PARAM, ENTITY_TYPES
from ..model.roles import Role

API_PREFIX = "/api/v1"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# (state, entity) -> this gateway's own items of a collection for the entity
LocalItems = Callable[[Any, Any], Awaitable[list[dict[str, Any]]]]


_PARAM = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Route:
    """One endpoint: method, OpenAPI-style path (without /api/v1), handler and contract."""

    method: str
    path: str
    handler: Handler
    role: Role
    summary: str
    status: int = 200
    alternates: tuple[int, ...] = ()
    multi_segment: tuple[str, ...] = ()  # path parameters that may span '/' (docs prefixes)
    feature: str | None = None  # feature whose absence answers 501
    tag: str = "server"
    response: str | None = None  # schema name in the OpenAPI components
    request: str | None = None
    streaming: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_write(self) -> bool:
        """True for methods that change state."""
        return self.method in ("POST", "PUT", "DELETE", "PATCH")

    @property
    def operation_id(self) -> str:
        """A stable operation id: the declared one, else derived from method and path."""
        declared = self.extra.get("operation_id")
        if declared:
            return str(declared)
        words = []
        for part in self.path.strip("/").split("/"):
            m = _PARAM.fullmatch(part)
            words.append(("by_" + m.group(1)) if m else part.replace("-", "_"))
        return self.method.lower() + "_" + "_".join(w for w in words if w) if words else "root"

    @property
    def params(self) -> list[str]:
        """Names of the path parameters."""
        return _PARAM.findall(self.path)

    def aiohttp_path(self) -> str:
        """The aiohttp path pattern; multi-segment parameters match across '/'."""
        path = self.path
        for name in self.params:
            # aiohttp's default `[^{}/]+` would route an id holding `{` or `}` elsewhere
            pattern = ".+" if name in self.multi_segment else "[^/]+"
            path = path.replace("{" + name + "}", "{" + name + ":" + pattern + "}")
        return API_PREFIX + (path if path != "/" else "")


class Registry:
    """Routes in registration order (first match wins for aiohttp)."""

    def __init__(self, vendor: str = "vendor") -> None:
        self.vendor = vendor
        self.routes: list[Route] = []
        self.local_items: dict[str, LocalItems] = {}  # collection -> its local item lister

    def add(self, method: str, path: str, handler: Handler, *, role: Role = Role.VIEWER,
            summary: str = "", **kw: Any) -> Route:
        """Declare one route; `x-vendor` in the path becomes the configured vendor word."""
        path = path.replace("x-vendor", f"x-{self.vendor}")
        route = Route(method, path, handler, role, summary or handler.__doc__ or "", **kw)
        self.routes.append(route)
        return route

    def entity_routes(
        self, method: str, suffix: str, handler: Handler, *,
        types: tuple[str, ...] = ENTITY_TYPES, **kw: Any
    ) -> None:
        """Declare `/{type}/{type_id}{suffix}` for each entity type."""
        tag = kw.pop("tag", None)
        for et in types:
            path = f"/{et}/{{{ENTITY_PARAM[et]}}}{suffix}"
            self.add(method, path, handler, tag=tag or et, **kw)

    def lists_items(self, collection: str, items: LocalItems) -> None:
        """Declare how a collection lists this gateway's own items of an entity (the fleet
        forwarder resolves a bare item id across peers with it, spec item-id rule 6)."""
        self.local_items[collection] = items

    def __iter__(self) -> Iterator[Route]:
        return iter(self.routes)

    def install(self, app: web.Application) -> dict[Any, Route]:
        """Add every route to the aiohttp router; returns aiohttp route -> Route."""
        table: dict[Any, Route] = {}
        for route in self.routes:
            paths = [route.aiohttp_path()]
            if route.path == "/":  # the root answers with and without the trailing slash
                paths.append(API_PREFIX + "/")
            # HEAD is served wherever GET is (aiohttp sends the headers without the body).
            methods = (route.method, "HEAD") if route.method == "GET" else (route.method,)
            for path in paths:
                for method in methods:
                    table[app.router.add_route(method, path, route.handler)] = route
        return table


def entity_type_of(request: web.Request) -> tuple[str, str]:
    """(entity_type, entity_id) of a request on an entity route."""
    info = request.match_info
    for et, param in ENTITY_PARAM.items():
        value = info.get(param)
        if value is not None:
            return et, value
    raise KeyError("not an entity route")
