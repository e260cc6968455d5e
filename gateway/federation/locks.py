"""Locks on an entity several gateways contribute: taken on every gateway that owns a member.

A primary's merged component (or app collision-free id) holds apps whose nodes run on robots;
their gateways guard the writes that reach those apps, so a lock held only at the primary
would not hold there. A lock taken on such an entity is also taken on each contributing peer
(same client id, credentials, scopes, expiry and break_lock, marked no-fan-out); a peer that
refuses undoes the whole lock and its answer is the caller's. Extend and release follow the
same peers. A peer that does not answer is named in the answer (`x-vendor.unlocked_on`).
Entities a single peer owns are not handled here: the forwarder sends their lock routes to it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
from aiohttp import web

from ..errors import ApiError
from ..model.entities import Entity
from .service import FederationService

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PeerLock:
    """A lock one peer holds for a lock of this gateway."""

    gateway: str
    path: str  # the entity's lock collection on the peer, e.g. /components/host/locks
    lock_id: str


async def _call(fed: FederationService, request: web.Request, gateway: str, method: str,
                path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
    """(status, parsed body) of one call to a peer; status 0 when it did not answer."""
    peer = fed.table.peers.get(gateway)
    if peer is None or not peer.online:
        return 0, "its health check fails"
    headers = fed.peer_headers(request, peer)
    headers[fed.no_fan_out_header] = "1"
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = orjson.dumps(body)
    try:
        async with peer.client.session.request(method, peer.client.api(path), headers=headers,
                                               data=data) as resp:
            raw = await resp.read()
            try:
                return resp.status, orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                return resp.status, raw[:200].decode("utf-8", "replace")
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        fed.table.suspect(gateway)
        return 0, f"did not answer ({type(exc).__name__})"


async def _each(fed: FederationService, calls: list[Any]) -> list[tuple[int, Any]]:
    budget = fed.settings.budgets.forward_s
    try:
        return await asyncio.wait_for(asyncio.gather(*calls), budget)
    except asyncio.TimeoutError:
        return [(0, f"no answer within aggregation.forward_timeout_ms ({budget * 1000:.0f} ms)")
                for _ in calls]


async def acquire(fed: FederationService, request: web.Request, entity: Entity,
                  body: dict[str, Any]) -> tuple[list[PeerLock], list[str]]:
    """The entity's lock taken on every contributing peer: (locks taken, peers not answering).

    A peer's refusal (any answer but 201) releases what was taken and is raised as the
    caller's error, naming the peer."""
    origins = fed.contributors(request, entity)
    if not origins:
        return [], []
    paths = [f"/{entity.kind}/{quote(o.remote_id, safe='')}/locks" for o in origins]
    answers = await _each(fed, [_call(fed, request, o.gateway, "POST", path, body)
                                for o, path in zip(origins, paths, strict=True)])
    taken: list[PeerLock] = []
    silent: list[str] = []
    refusal: tuple[str, int, Any] | None = None
    for origin, path, (status, answer) in zip(origins, paths, answers, strict=True):
        if status == 201 and isinstance(answer, dict) and isinstance(answer.get("id"), str):
            taken.append(PeerLock(origin.gateway, path, answer["id"]))
        elif status == 0:
            silent.append(origin.gateway)
        elif refusal is None:
            refusal = (origin.gateway, status, answer)
    if refusal is not None:
        await release(fed, request, taken)
        gateway, status, answer = refusal
        detail: dict[str, Any] = answer if isinstance(answer, dict) else {"message": str(answer)}
        given = detail.get("parameters")
        params: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
        params.update(gateway=gateway, entity_id=entity.id)
        raise ApiError(status if 400 <= status < 600 else 502,
                       str(detail.get("error_code") or "x-vendor-peer-unavailable"),
                       f"Gateway '{gateway}' (owning members of {entity.type} '{entity.id}') "
                       f"refused the lock: {detail.get('message', f'HTTP {status}')}",
                       parameters=params)
    for gateway in silent:
        log.warning("lock on %s '%s' not taken on gateway %s: it did not answer",
                    entity.kind, entity.id, gateway)
    return taken, silent


async def release(fed: FederationService, request: web.Request,
                  locks: list[PeerLock]) -> list[str]:
    """Release the peers' locks; the gateways that did not confirm (logged)."""
    answers = await _each(fed, [_call(fed, request, pl.gateway, "DELETE",
                                      f"{pl.path}/{quote(pl.lock_id, safe='')}", None)
                                for pl in locks])
    failed = [pl.gateway for pl, (status, _) in zip(locks, answers, strict=True)
              if status not in (204, 404)]  # 404: expired there already
    for gateway in failed:
        log.warning("a peer lock on gateway %s was not released; it ends at its expiry",
                    gateway)
    return failed


async def extend(fed: FederationService, request: web.Request, locks: list[PeerLock],
                 body: dict[str, Any]) -> list[str]:
    """Extend the peers' locks like this gateway's; the gateways that did not confirm."""
    answers = await _each(fed, [_call(fed, request, pl.gateway, "PUT",
                                      f"{pl.path}/{quote(pl.lock_id, safe='')}", body)
                                for pl in locks])
    return [pl.gateway for pl, (status, _) in zip(locks, answers, strict=True) if status != 204]
