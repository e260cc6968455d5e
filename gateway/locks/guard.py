"""Lock enforcement at the edge: which entity and collection a write touches, the guard check,
the member check of writes through a parent, the global fault-clear filter, expiry (a timer per
lock, and the periodic sweep) and lock rule resolution from settings.

A write through a component, function or area that reaches member apps (a member-qualified or
bare item id, a collection reset, a fault clear, a publish, an operation) is checked against
each member it reaches: the member's lock and its components' locks, and the required scopes
of the member and of the components between it and the parent (`check_members`). A refused
write changes nothing and names every locked member.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..auth.enforce import claims_of
from ..events import LOCKS, Event
from ..http.routes import ENTITY_PARAM, ENTITY_TYPES, Route
from ..plugins.context import parse_plugin_source
from .rules import (
    Lock,
    LockConfig,
    LockError,
    LockManager,
    Target,
    resolve_config,
)
from .settings import LockSettings
from .wire import LOCKS as LOCK_WIRE

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)

# The manifest's per-entity `lock` block source: (kind, entity_id) -> the block or None.
EntityConfig = Callable[[str, str], dict[str, Any] | None]
CLIENT_HEADER = "X-Client-Id"
# Path words under an entity whose writes count as another lock collection.
COLLECTION_ALIASES = {"status": "modes"}  # lifecycle control changes the entity's mode
NESTED = ("subcomponents", "subareas")


@dataclass(frozen=True)
class WriteTarget:
    """Where a write route lands: entity kind, path parameters naming it, and the collection."""

    kind: str
    id_param: str
    collection: str
    entity_id: str | None = None  # a route naming one entity literally (plugin routes may)


def write_target(route: Route) -> WriteTarget | None:
    """The lock target of a write route; None for routes no lock can cover.

    Not covered: server-level routes (the global fault clear has its own filter), areas and
    functions (never locked, and locks do not propagate downward), and the lock routes (their
    own ownership rules apply).
    """
    segs = [s for s in route.path.strip("/").split("/") if s]
    if len(segs) < 3 or segs[0] not in ENTITY_TYPES or segs[0] not in ("components", "apps"):
        return None
    id_param, literal = ENTITY_PARAM[segs[0]], None
    if segs[1].startswith("{"):  # plugin routes may name the id parameter their own way
        id_param = segs[1][1:-1]
    else:
        literal = segs[1]
    rest = segs[2:]
    if len(rest) >= 3 and rest[0] in NESTED and rest[1].startswith("{"):
        id_param, literal = rest[1][1:-1], None
        rest = rest[2:]
    word = rest[0]
    if word == "locks" or word.startswith("{"):
        return None
    return WriteTarget(segs[0], id_param, COLLECTION_ALIASES.get(word, word), literal)


def ancestors(entities: Any, kind: str, entity_id: str) -> list[tuple[str, str]]:
    """Lockable ancestors, nearest first: an app's component, then parent components."""
    chain: list[tuple[str, str]] = []
    comp: str | None = None
    if kind == "apps":
        app = entities.apps.get(entity_id)
        comp = app.component if app is not None else None
    else:
        current = entities.components.get(entity_id)
        comp = current.parent if current is not None else None
    seen = {entity_id} if kind == "components" else set()
    while comp and comp not in seen and comp in entities.components:
        seen.add(comp)
        chain.append(("components", comp))
        comp = entities.components[comp].parent
    return chain


def between(entities: Any, via_kind: str, via_id: str, member: str) -> list[tuple[str, str]]:
    """The lockable entities whose required scopes a write through `via` to `member` meets:
    the member app and its host component, then the components up to `via` (exclusive: the
    guard checks the addressed entity). Through an area or a function: the app and its host,
    as if the write were addressed to either of them."""
    out: list[tuple[str, str]] = [("apps", member)]
    for kind, comp in ancestors(entities, "apps", member):
        if via_kind == "components" and comp == via_id:
            break
        out.append((kind, comp))
        if via_kind != "components":
            break
    return out


def subject_of(request: web.Request) -> str:
    """The token subject of a request that carried one (auth on), else ''."""
    claims = claims_of(request)
    return claims.subject if claims is not None else ""


def owner_subject(request: web.Request) -> str | None:
    """The subject to match for `owned` on reads: None when the request was not authenticated."""
    claims = claims_of(request)
    return claims.subject if claims is not None else None


def guard_members(request: web.Request, via: Any, collection: str, members: Any) -> None:
    """Handlers' call: refuse (409) a write through a parent that reaches locked members."""
    svc = request.app.get(LOCK_SERVICE)
    if svc is not None and svc.enabled:
        svc.check_members(request, via, collection, members)


def config_source(settings: LockSettings, entity_config: EntityConfig | None
                  ) -> Callable[[str, str], LockConfig]:
    """Resolution: per-entity block (if a source is given), then per-type, then global.

    The per-entity source (a manifest's, discovery/pipeline.py): (kind, entity_id) -> the
    manifest `lock` block ({required_scopes, breakable, max_expiration}) or None.
    """
    global_max = settings.default_max_expiration_s
    per_type = settings.per_type()

    def config_of(kind: str, entity_id: str) -> LockConfig:
        block = entity_config(kind, entity_id) if entity_config is not None else None
        required, breakable = per_type.get(kind, ((), True))
        return resolve_config(block, required, breakable, global_max)

    return config_of


class LockService:
    """The lock manager of a running gateway: guard check, clear filter, sweep, events."""

    def __init__(self, state: GatewayState, entity_config: EntityConfig | None = None) -> None:
        self.state = state
        self.entity_config = entity_config  # the manifest's per-entity `lock` blocks
        self.settings = state.settings.typed(LockSettings.from_settings)
        self.enabled = self.settings.enabled
        self.manager = LockManager(config_source(self.settings, entity_config))
        self._targets: dict[Route, WriteTarget | None] = {}
        self._task: asyncio.Task[None] | None = None
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        # lock id -> the peers' locks taken with it (federation/locks.py: mixed entities)
        self.peer_locks: dict[str, list[Any]] = {}

    # guard ----------------------------------------------------------------------------------
    def target(self, request: web.Request, route: Route) -> Target | None:
        """The lock target of a routed write, or None when no lock applies."""
        if route not in self._targets:
            self._targets[route] = write_target(route)
        spec = self._targets[route]
        if spec is None:
            return None
        entity_id = spec.entity_id or request.match_info.get(spec.id_param)
        if entity_id is None:
            return None
        cache = self.state.cache
        chain = ancestors(cache.entities, spec.kind, entity_id) if cache is not None else []
        return Target(spec.kind, entity_id, spec.collection, chain)

    async def check(self, request: web.Request, route: Route) -> None:
        """Guard check of every write: 409 when a lock is required or held by another client."""
        if not self.manager.locks and not self._any_required():
            return
        target = self.target(request, route)
        if target is None:
            return
        try:
            self.manager.check(target, request.headers.get(CLIENT_HEADER), time.time(),
                               subject_of(request))
        except LockError as err:
            raise self.state.serializer(LOCK_WIRE).error(err) from None

    def check_members(self, request: web.Request, via: Any, collection: str,
                      members: Any) -> None:
        """Refuse (409) a write through `via` (a component, function or area) that reaches
        member apps another client holds a lock on, or whose required scopes the caller lacks;
        the error names every refused member. A write to an app itself is the guard's."""
        if via.kind == "apps" or self.quiet():
            return
        es = self.state.cache.entities
        client, subject, now = request.headers.get(CLIENT_HEADER), subject_of(request), \
            time.time()
        refused: list[tuple[str, LockError]] = []
        for member in dict.fromkeys(members):
            if member not in es.apps:
                continue
            target = Target("apps", member, collection, ancestors(es, "apps", member),
                            between(es, via.kind, via.id, member))
            try:
                self.manager.check(target, client, now, subject)
            except LockError as err:
                refused.append((member, err))
        if not refused:
            return
        error = self.state.serializer(LOCK_WIRE).error(refused[0][1])
        names = [member for member, _ in refused]
        error.message = (f"{error.message}; {via.kind[:-1]} '{via.id}' reaches "
                         f"{'member' if len(names) == 1 else 'members'} "
                         f"{', '.join(names)} ({collection}): nothing was changed")
        error.parameters = {**(error.parameters or {}), "locked_members": [
            {"app_id": member, "entity_id": e.entity_id,
             "lock_id": e.lock.id if e.lock is not None else None, "reason": e.kind}
            for member, e in refused]}
        raise error

    def source_apps(self, sources: Any) -> list[str]:
        """The apps whose nodes (or plugin entities) report under these fault sources."""
        es = self.state.cache.entities
        ids: list[str] = []
        for source in sources:
            ids.extend(app.id for app in es.apps.values() if app.node_fqn == source)
            ref = parse_plugin_source(source)  # a fault a plugin raised for its app
            if ref is not None and ref[1] == "apps" and ref[2] in es.apps:
                ids.append(ref[2])
        return ids

    def quiet(self) -> bool:
        """True when check() passes every write: no lock is held and none is required."""
        return not self.manager.locks and not self._any_required()

    def _any_required(self) -> bool:
        return (any(required for _kind, required, _breakable in self.settings.defaults)
                or self.entity_config is not None)

    def guard_clear(self, request: web.Request, via: Any, sources: Any) -> None:
        """The fault manager's clear guard: refuse (409) a clear through a parent that reaches
        locked apps."""
        if not self.quiet():
            self.check_members(request, via, "faults", self.source_apps(sources))

    def clear_filter(self, request: web.Request, code: str, sources: list[str]) -> bool:
        """Global fault clear: skip a fault when any reporting source's app refuses the write."""
        if not self.manager.locks and not self._any_required():
            return False
        es = self.state.cache.entities
        client, subject = request.headers.get(CLIENT_HEADER), subject_of(request)
        now = time.time()
        for app_id in self.source_apps(sources):
            target = Target("apps", app_id, "faults", ancestors(es, "apps", app_id))
            try:
                self.manager.check(target, client, now, subject)
            except LockError:
                return True
        return False

    # expiry ---------------------------------------------------------------------------------
    def publish(self, lock: Lock, change: str) -> None:
        """One lock event on the bus (expired events end the client's cyclic subscriptions)."""
        payload = {"lock_id": lock.id, "client_id": lock.client_id,
                   "entity_type": lock.kind, "entity_id": lock.entity_id,
                   "scopes": list(lock.scopes),
                   "cyclic_subscriptions": lock.covers("cyclic-subscriptions")}
        self.state.events.publish(Event(LOCKS, lock.entity_id, lock.id, change, payload))

    def sweep(self, now: float) -> list[Lock]:
        """Remove expired locks and publish their expiry."""
        gone = self.manager.sweep(now)
        for lock in gone:
            log.info("lock %s on %s '%s' expired", lock.id, lock.kind, lock.entity_id)
            self.disarm(lock)
            self.peer_locks.pop(lock.id, None)  # the peers' copies expire there alike
            self.publish(lock, "expired")
        return gone

    def arm(self, lock: Lock) -> None:
        """Expire this lock at its expiry instant (acquired or extended): a timer per lock."""
        self.disarm(lock)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (pure use): the sweep still removes it
        delay = max(0.0, lock.expires_at - time.time())
        self._timers[(lock.kind, lock.entity_id)] = loop.call_later(delay, self._due, lock)

    def disarm(self, lock: Lock) -> None:
        """Cancel the entity's expiry timer (released, broken, expired)."""
        handle = self._timers.pop((lock.kind, lock.entity_id), None)
        if handle is not None:
            handle.cancel()

    def _due(self, lock: Lock) -> None:
        self._timers.pop((lock.kind, lock.entity_id), None)
        if self.manager.locks.get((lock.kind, lock.entity_id)) is not lock:
            return  # released or replaced meanwhile
        if not lock.expired(time.time()):
            self.arm(lock)  # the loop's clock ran ahead of the wall clock
            return
        try:
            self.sweep(time.time())
        except Exception:
            log.exception("lock expiry failed")

    async def _sweep_loop(self) -> None:
        interval = self.settings.cleanup_interval_s
        while True:
            await asyncio.sleep(interval)
            try:
                self.sweep(time.time())
            except Exception:
                log.exception("lock sweep failed")

    async def start(self) -> None:
        """Start the periodic sweep."""
        if self.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._sweep_loop())

    async def shutdown(self) -> None:
        """Nothing streams."""

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """The x-vendor-locks block of /health (locking on)."""
        if not self.enabled:
            return {}
        return {"x-vendor-locks": lambda: {"held": len(self.manager.locks)}}

    async def stop(self) -> None:
        """Stop the sweep and the expiry timers."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None


LOCK_SERVICE: web.AppKey[LockService] = web.AppKey("lock_service", LockService)
