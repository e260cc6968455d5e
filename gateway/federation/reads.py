"""Reads of one entity's resource on each fleet peer contributing it, for plugins."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from .client import PeerError
from .fleet import Origin
from .service import FederationService


async def peer_reads(fed: FederationService, kind: str, entity_id: str,
                     suffix: str) -> list[tuple[str, Any]]:
    """(peer, JSON body) of `GET /{kind}/{id on the peer}{suffix}` on every contributing peer
    that answers 200 within aggregation.timeout_ms (marked no-fan-out: one level only)."""

    async def one(origin: Origin) -> tuple[str, Any] | None:
        peer = fed.table.peers.get(origin.gateway)
        if peer is None or not peer.online:
            return None
        headers = fed.peer_headers(None, peer)
        headers[fed.no_fan_out_header] = "1"
        path = f"/{kind}/{quote(origin.remote_id, safe='')}{suffix}"
        try:
            answer = await peer.client.get(path, budget_s=fed.settings.budgets.timeout_s,
                                           headers=headers)
            return (origin.gateway, answer.json()) if answer.status == 200 else None
        except PeerError:
            return None

    found = await asyncio.gather(*(one(o) for o in fed.view.peers_of(kind, entity_id)))
    return [f for f in found if f is not None]
