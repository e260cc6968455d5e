"""Parallel peer calls for a collection read: every peer within its budget, never their sum."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .client import PeerError
from .combine import PeerAnswer
from .health import CANCELED, TIMEOUT, UNREACHABLE
from .peers import PeerTable


async def _one(table: PeerTable, name: str, path: str, headers: dict[str, str],
               budget_s: float) -> PeerAnswer:
    peer = table.peers.get(name)
    if peer is None or not peer.online:
        # Offline peers are not called; they are reported so the answer is marked partial.
        return PeerAnswer(name, reason=UNREACHABLE)
    try:
        body = await peer.client.get_items(path, budget_s=budget_s, headers=headers)
    except PeerError as exc:
        if exc.reason in (TIMEOUT, UNREACHABLE):
            table.suspect(name)
        return PeerAnswer(name, reason=exc.reason)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return PeerAnswer(name, reason=CANCELED)
    if body is None:
        return PeerAnswer(name, body={"omitted": True})
    return PeerAnswer(name, items=body["items"], body=body)


async def gather(table: PeerTable, calls: Sequence[tuple[str, str, dict[str, str]]],
                 budget_s: float) -> list[PeerAnswer]:
    """Answers of (peer name, path, headers) calls made in parallel, in call order."""
    if not calls:
        return []
    results: list[Any] = await asyncio.gather(
        *(_one(table, name, path, headers, budget_s) for name, path, headers in calls),
        return_exceptions=True)
    out: list[PeerAnswer] = []
    for (name, _, _), result in zip(calls, results, strict=True):
        if isinstance(result, PeerAnswer):
            out.append(result)
        elif isinstance(result, asyncio.CancelledError):
            out.append(PeerAnswer(name, reason=CANCELED))
        else:
            out.append(PeerAnswer(name, reason=UNREACHABLE))
    return out
