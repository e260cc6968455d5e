"""Lifecycle control of a component several gateways contribute: each peer drives its own apps.

A primary's merged component holds apps whose nodes run on the robots; only the robot's
gateway can reach them. The PUT is sent to every contributing peer (marked no-fan-out) and
their transition records are merged into the primary's answer with the apps' fleet ids.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
from aiohttp import web

from ..model.entities import Entity
from .service import FederationService


@dataclass
class PeerTransitions:
    """What the peers answered: their apps' records (fleet ids) and what they left out."""

    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)


async def _one(fed: FederationService, request: web.Request, name: str, remote_id: str,
               kind: str, transition: str) -> tuple[str, int, Any]:
    """(peer, status, parsed body or an error text) of one peer's PUT."""
    peer = fed.table.peers.get(name)
    if peer is None or not peer.online:
        return name, 0, "its health check fails"
    headers = fed.peer_headers(request, peer)
    headers[fed.no_fan_out_header] = "1"
    url = peer.client.api(f"/{kind}/{quote(remote_id, safe='')}/status/{transition}")
    try:
        async with peer.client.session.put(url, headers=headers) as resp:
            body = await resp.read()
            return name, resp.status, orjson.loads(body) if body else {}
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError, orjson.JSONDecodeError) as exc:
        fed.table.suspect(name)
        return name, 0, f"did not answer ({type(exc).__name__})"


async def peer_transitions(fed: FederationService, request: web.Request, entity: Entity,
                           transition: str) -> PeerTransitions:
    """The transition requested from every peer contributing the entity, within
    aggregation.forward_timeout_ms; app ids in the answers are the fleet's."""
    out = PeerTransitions()
    origins = fed.contributors(request, entity)
    if not origins:
        return out
    budget = fed.settings.budgets.forward_s
    calls = [_one(fed, request, o.gateway, o.remote_id, entity.kind, transition)
             for o in origins]
    try:
        answers = await asyncio.wait_for(asyncio.gather(*calls), budget)
    except asyncio.TimeoutError:
        out.skipped.append(f"peers: no answer within aggregation.forward_timeout_ms "
                           f"({budget * 1000:.0f} ms)")
        return out
    for name, status, body in answers:
        if status == 202 and isinstance(body, dict):
            for record in body.get("apps") or []:
                if isinstance(record, dict) and "app_id" in record:
                    record = {**record, "app_id": fed.rename(name, str(record["app_id"])),
                              "gateway": name}
                    out.records.append(record)
                    out.statuses.append(str(record.get("status", "")))
            for reason in (body.get(fed.xv) or {}).get("skipped") or []:
                app_id, sep, why = str(reason).partition(": ")
                out.skipped.append(f"{fed.rename(name, app_id)}: {why}" if sep else
                                   f"{name}: {reason}")
        elif isinstance(body, dict):
            out.skipped.append(f"{name}: {body.get('message', f'HTTP {status}')}")
        else:
            out.skipped.append(f"{name}: {body}")
    return out
