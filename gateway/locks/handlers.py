"""Locks on components and apps: acquire, list, detail, extend, release."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from ..discovery.keys import DISCOVERY
from ..errors import invalid_parameter
from ..faults.keys import FAULT_SERVICE
from ..federation import locks as peer_locks
from ..http.jsonutil import json_response
from ..http.resource_helpers import envelope, federation, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..model.roles import Role
from .guard import CLIENT_HEADER, LOCK_SERVICE, LockService, owner_subject, subject_of
from .rules import LockError, check_client_id
from .wire import LOCKS

CA = ("components", "apps")


def service(request: web.Request) -> LockService:
    """The lock service; 501 when locking is disabled."""
    svc = request.app[LOCK_SERVICE]
    if not svc.enabled:
        raise state_of(request).wire.errors.feature_absent("locks", "Set locking.enabled to true")
    return svc


async def _json(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except ValueError:
        raise invalid_parameter("The request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise invalid_parameter("The request body must be a JSON object")
    return body


def _client(request: web.Request) -> str:
    try:
        return check_client_id(request.headers.get(CLIENT_HEADER))
    except LockError as err:
        raise state_of(request).serializer(LOCKS).error(err) from None


async def acquire(request: web.Request) -> web.Response:
    """Lock the entity (201); break_lock replaces a breakable lock of another client."""
    svc = service(request)
    entity = resolve_entity(request)
    client = _client(request)
    body = await _json(request)
    scopes = body.get("scopes")
    if scopes is not None and not isinstance(scopes, list):
        raise invalid_parameter("scopes must be a list of collection names", entity_id=entity.id)
    if "lock_expiration" not in body:
        raise invalid_parameter("lock_expiration (seconds) is required", entity_id=entity.id)
    break_lock = body.get("break_lock", False)
    if not isinstance(break_lock, bool):
        raise invalid_parameter("break_lock must be true or false", entity_id=entity.id)
    def take(dry_run: bool) -> Any:
        try:
            return svc.manager.acquire(entity.kind, entity.id, client, scopes,
                                       body["lock_expiration"], break_lock, time.time(),
                                       subject_of(request), dry_run)
        except LockError as err:
            err.entity_id = err.entity_id or entity.id
            raise state_of(request).serializer(LOCKS).error(err) from None

    fed = federation(state_of(request))
    held: list[peer_locks.PeerLock] = []
    unlocked: list[str] = []
    if fed is not None and fed.contributors(request, entity):
        take(True)  # refused here first: no peer is asked
        held, unlocked = await peer_locks.acquire(fed, request, entity, {
            "lock_expiration": body["lock_expiration"], "break_lock": break_lock,
            **({"scopes": scopes} if scopes is not None else {})})
    try:
        lock, replaced = take(False)
    except BaseException:
        if held:
            await peer_locks.release(fed, request, held)
        raise
    if replaced is not None:
        svc.peer_locks.pop(replaced.id, None)
        svc.publish(replaced, "broken")
    if held:
        svc.peer_locks[lock.id] = held
    svc.arm(lock)
    svc.publish(lock, "acquired")
    location = f"{request.path.rstrip('/')}/{lock.id}"
    answer = state_of(request).serializer(LOCKS).lock(lock, client, subject_of(request))
    if held or unlocked:  # a lock on an entity other gateways contribute to
        answer[state_of(request).xv] = {"gateways": ["local", *(p.gateway for p in held)],
                                        **({"unlocked_on": unlocked} if unlocked else {})}
    return json_response(answer,
                         status=201,
                         headers={"Location": location})


async def list_locks(request: web.Request) -> web.Response:
    """The entity's lock (at most one); X-Client-Id sets `owned`."""
    state = state_of(request)
    svc = service(request)
    entity = resolve_entity(request)
    client = request.headers.get(CLIENT_HEADER)
    items = [state.serializer(LOCKS).lock(lk, client, owner_subject(request))
             for lk in svc.manager.entity_locks(entity.kind, entity.id)]
    return json_response(envelope(state, items, entity.id))


def _lock_id(request: web.Request) -> str:
    return request.match_info["lock_id"]


async def get_lock(request: web.Request) -> web.Response:
    """One lock of the entity."""
    svc = service(request)
    entity = resolve_entity(request)
    try:
        lock = svc.manager.get(entity.kind, entity.id, _lock_id(request))
    except LockError as err:
        raise state_of(request).serializer(LOCKS).error(err, _lock_id(request)) from None
    client = request.headers.get(CLIENT_HEADER)
    return json_response(state_of(request).serializer(LOCKS).lock(lock, client,
                                                           owner_subject(request)))


async def extend(request: web.Request) -> web.Response:
    """Move the expiry to now plus lock_expiration (204)."""
    svc = service(request)
    entity = resolve_entity(request)
    client = _client(request)
    body = await _json(request)
    if "lock_expiration" not in body:
        raise invalid_parameter("lock_expiration (seconds) is required", entity_id=entity.id)
    try:
        lock = svc.manager.extend(entity.kind, entity.id, _lock_id(request), client,
                                  body["lock_expiration"], time.time(), subject_of(request))
    except LockError as err:
        raise state_of(request).serializer(LOCKS).error(err, _lock_id(request)) from None
    svc.arm(lock)
    svc.publish(lock, "extended")
    fed = federation(state_of(request))
    if fed is not None and svc.peer_locks.get(lock.id):
        await peer_locks.extend(fed, request, svc.peer_locks[lock.id],
                                {"lock_expiration": body["lock_expiration"]})
    return web.Response(status=204)


async def release(request: web.Request) -> web.Response:
    """Release a lock the caller holds (204)."""
    svc = service(request)
    entity = resolve_entity(request)
    client = _client(request)
    try:
        lock = svc.manager.release(entity.kind, entity.id, _lock_id(request), client,
                                   time.time(), subject_of(request))
    except LockError as err:
        raise state_of(request).serializer(LOCKS).error(err, _lock_id(request)) from None
    svc.disarm(lock)
    svc.publish(lock, "released")
    held = svc.peer_locks.pop(lock.id, None)
    fed = federation(state_of(request))
    if fed is not None and held:
        await peer_locks.release(fed, request, held)
    return web.Response(status=204)


def install(app: web.Application, state: GatewayState) -> None:
    """The lock service (its sweep runs with the feature services, app.feature_services): guard
    check on every write, the fault manager's clear filter and guard."""
    disc = app.get(DISCOVERY)  # manifest modes: per-entity lock blocks
    svc = LockService(state, disc.lock_block if disc is not None else None)
    app[LOCK_SERVICE] = svc
    if not svc.enabled:
        state.features.discard("locks")  # root capability `locking` false; routes answer 501
        return
    state.features.add("locks")
    state.health.update(svc.health_blocks())  # its place in /health: before the ROS side's
    state.guard.add(svc.check, writes_only=True, quiet=svc.quiet)
    hooks = app[FAULT_SERVICE].hooks
    hooks.clear_filters.append(svc.clear_filter)
    hooks.clear_guards.append(svc.guard_clear)


def register(reg: Registry) -> None:
    """Declare the lock routes (components and apps)."""
    kw: dict[str, Any] = {"types": CA, "feature": "locks"}
    client = {"headers": {"X-Client-Id": "any unique string the client chooses"}}
    reg.entity_routes("POST", "/locks", acquire, role=Role.OPERATOR, status=201,
                      request="LockRequest", response="Lock", summary="Acquire a lock",
                      extra=client, **kw)
    reg.entity_routes("GET", "/locks", list_locks, response="LockList",
                      summary="List the entity's locks", **kw)
    reg.entity_routes("GET", "/locks/{lock_id}", get_lock, response="Lock",
                      summary="One lock", **kw)
    reg.entity_routes("PUT", "/locks/{lock_id}", extend, role=Role.OPERATOR, status=204,
                      request="LockExtend", summary="Extend a lock", extra=client, **kw)
    reg.entity_routes("DELETE", "/locks/{lock_id}", release, role=Role.OPERATOR, status=204,
                      summary="Release a lock", extra=client, **kw)
