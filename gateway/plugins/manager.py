"""The loaded plugins: their routes in the one registry, providers, entities, lifecycle, health."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..errors import ApiError
from ..http import client_tls
from ..http.jsonutil import json_response
from ..http.openapi import add_schemas
from ..http.routes import Registry
from ..model.entities import KINDS, Entity, EntitySet
from ..model.roles import Role
from .api import INTROSPECTION, UPDATES, PluginRoute
from .calls import Caller
from .context import PluginContext, plugin_source
from .loader import Failure, Loaded, load_all
from .settings import PluginSettings

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)

INTROSPECT_INTERVAL_S = 2.0
ENTITY_ID = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class PluginManager:
    """Loads the plugins the `plugins` setting names and runs them beside the gateway."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        plugins = settings.typed(PluginSettings.from_settings)
        self.timeout_s = plugins.plugin_call_timeout_sec
        self.loaded, self.failures = load_all(plugins.plugins, plugins)
        self.callers = {p.name: Caller(p.name, self.timeout_s) for p in self.loaded}
        self.contexts: dict[str, PluginContext] = {}
        self.owners: dict[tuple[str, str], str] = {}  # (kind, id) -> plugin
        self._layers: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self._task: asyncio.Task[None] | None = None
        self._state: GatewayState | None = None
        self.started: list[str] = []

    # providers ------------------------------------------------------------------------------
    def provider(self, kind: str) -> tuple[Loaded, Any] | None:
        """The first loaded plugin offering a provider of kind."""
        for p in self.loaded:
            if kind in p.providers:
                return p, p.providers[kind]
        return None

    def owner_of(self, entity: Entity) -> Loaded | None:
        """The plugin that introduced this entity, if any."""
        name = self.owners.get((entity.kind, entity.id))
        return next((p for p in self.loaded if p.name == name), None)

    def fault_sources(self, entity: Entity, entities: EntitySet) -> list[str]:
        """Fault sources of the plugin entities in an entity's scope (itself, its apps)."""
        out = []
        for kind, eid in [(entity.kind, entity.id)] + [("apps", a.id) for a in
                                                        entities.member_apps(entity)]:
            name = self.owners.get((kind, eid))
            if name is not None:
                out.append(plugin_source(name, kind, eid))
        return list(dict.fromkeys(out))

    def caller(self, name: str) -> Caller:
        """The call wrapper of one plugin."""
        return self.callers[name]

    # routes ---------------------------------------------------------------------------------
    def register_routes(self, reg: Registry) -> None:
        """Declare every plugin route in the registry: admin-only, `x-` named."""
        taken = {(r.method, r.path) for r in reg}
        for p in list(self.loaded):
            try:
                routes = list(p.plugin.routes() or [])
                for r in routes:
                    _check_route(r)
            except Exception as exc:  # the plugin is dropped, the gateway runs on
                self._fail(p, f"routes: {type(exc).__name__}: {exc}")
                continue
            for r in routes:
                path = r.path.replace("x-vendor", f"x-{reg.vendor}")
                if (r.method.upper(), path) in taken:
                    log.error("plugin %s: route %s %s is taken; skipped", p.name, r.method, path)
                    continue
                taken.add((r.method.upper(), path))
                add_schemas(r.schemas)  # the route's own body schemas, by name
                writes = r.method.upper() in ("POST", "PUT", "PATCH")
                reg.add(r.method.upper(), r.path, self._route_handler(p.name, r), role=Role.ADMIN,
                        summary=r.summary or f"{p.name} plugin route", tag="plugins",
                        response=r.response or "PluginResponse",
                        request=r.request or ("PluginRequest" if writes else None),
                        extra={"plugin": p.name})

    def _route_handler(self, name: str, route: PluginRoute) -> Any:
        caller = self.callers[name]
        fn = route.handler

        async def plugin_route(request: web.Request) -> web.StreamResponse:
            entity_id = next(iter(request.match_info.values()), None)
            result = await caller(fn, request, entity_id=entity_id, what=route.path)
            if isinstance(result, web.StreamResponse):
                return result
            return json_response(result)

        functools.update_wrapper(plugin_route, fn if inspect.isfunction(fn) else plugin_route)
        plugin_route.__doc__ = route.summary or f"{name} plugin route"
        return plugin_route

    def _fail(self, p: Loaded, reason: str) -> None:
        log.error("plugin %s disabled: %s", p.name, reason)
        self.loaded.remove(p)
        self.failures.append(Failure(p.name, reason))

    # lifecycle ------------------------------------------------------------------------------
    async def start(self, state: GatewayState, app: web.Application) -> None:
        """Give each plugin its context, start it, and begin merging plugin entities."""
        self._state = state
        state.health_warnings.append(self.warnings)
        state.health["x-vendor-plugins"] = self.health
        if self.loaded:  # a plugin may be an https client with aiohttp's default contexts
            await client_tls.ensure_ca()
        for p in list(self.loaded):
            ctx = self.contexts[p.name] = PluginContext(state, app, p.name, self.callers[p.name])
            caller = self.callers[p.name]
            try:
                await caller(p.plugin.set_context, ctx, what="set_context")
                await caller(p.plugin.start, what="start")
                self.started.append(p.name)
            except ApiError as exc:
                self._fail(p, f"start: {exc.message}")
        if any(INTROSPECTION in p.providers for p in self.loaded):
            state.cache.layers.append(self._merge_layers)
            await self._introspect_all()
            self._task = asyncio.get_running_loop().create_task(self._introspect_loop(),
                                                                name="plugin-introspection")

    async def stop(self) -> None:
        """Stop every started plugin (each within its call timeout)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for p in reversed(self.loaded):
            if p.name in self.started:
                try:
                    await self.callers[p.name](p.plugin.shutdown, what="shutdown")
                except ApiError as exc:
                    log.warning("plugin %s shutdown: %s", p.name, exc.message)
        for caller in self.callers.values():
            caller.close()

    # introspection --------------------------------------------------------------------------
    async def _introspect_all(self) -> None:
        changed = False
        for p in self.loaded:
            provider = p.providers.get(INTROSPECTION)
            if provider is None:
                continue
            try:
                result = await self.callers[p.name](provider.introspect, what="introspect")
            except ApiError as exc:
                log.warning("plugin %s introspect: %s", p.name, exc.message)
                continue
            layer = _normalize(result)
            if self._layers.get(p.name) != layer:
                self._layers[p.name] = layer
                changed = True
        if changed and self._state is not None:
            self._state.cache.reapply()

    async def _introspect_loop(self) -> None:
        while True:
            await asyncio.sleep(INTROSPECT_INTERVAL_S)
            try:
                await self._introspect_all()
            except Exception:
                log.exception("plugin introspection failed")

    def _merge_layers(self, es: EntitySet) -> None:
        """Add plugin entities to a freshly built entity set (runtime entities win ids)."""
        owners: dict[tuple[str, str], str] = {}
        first_component = next(iter(es.components), None)
        for name, layer in self._layers.items():
            for kind in KINDS:
                for item in layer.get(kind, []):
                    eid = item["id"]
                    if es.get(kind, eid) is not None:
                        continue
                    entity = Entity(kind, eid, str(item.get("name") or eid), source=name,
                                    description=str(item.get("description", "")))
                    if kind == "apps":
                        entity.component = item.get("component") or first_component
                        entity.is_online = bool(item.get("is_online", True))
                    elif kind in ("components", "functions"):
                        entity.hosts = [str(h) for h in item.get("hosts", [])]
                        entity.area = item.get("area")
                    es.of(kind)[eid] = entity
                    owners[(kind, eid)] = name
            for app in (es.apps[i] for k, i in owners if k == "apps"):
                comp = es.components.get(app.component or "")
                if comp is not None and app.id not in comp.hosts:
                    comp.hosts.append(app.id)
        self.owners = owners

    # health ---------------------------------------------------------------------------------
    def warnings(self) -> list[dict[str, Any]]:
        """One /health warning per plugin that failed to load or start."""
        return [{"code": "plugin_load_failed",
                 "message": f"plugin '{f.name}' is not loaded: {f.reason}",
                 "entity_ids": [], "ros_node_fqns": [], "peer_names": [],
                 "plugin": f.name} for f in self.failures]

    def health(self) -> dict[str, Any]:
        """The /health plugins block."""
        updates = self.provider(UPDATES)
        return {
            "loaded": [p.name for p in self.loaded],
            "failed": [f.name for f in self.failures],
            "update_provider": updates[0].name if updates else None,
            "calls": {name: c.stats() for name, c in self.callers.items()},
        }


def _check_route(r: PluginRoute) -> None:
    if r.method.upper() not in ("GET", "POST", "PUT", "DELETE", "PATCH"):
        raise ValueError(f"route {r.path}: method {r.method!r} is not served")
    if not r.path.startswith("/") or not any(seg.startswith("x-") for seg in r.path.split("/")):
        raise ValueError(f"route {r.path!r}: plugin routes start with '/' and carry an "
                         "'x-' vendor segment")


def _normalize(result: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(result, dict):
        return out
    groups = result.get("new_entities", result)
    for kind in KINDS:
        items = groups.get(kind) or []
        out[kind] = [dict(i) for i in items if isinstance(i, dict)
                     and isinstance(i.get("id"), str) and ENTITY_ID.match(i["id"])]
    return out


PLUGINS: web.AppKey[PluginManager] = web.AppKey("plugins", PluginManager)
