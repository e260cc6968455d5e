"""Parallel peer calls for a collection read: every peer within its budget, never their sum."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from .client import PeerError
from .combine import PeerAnswer
from .health import CANCELED, TIMEOUT, UNREACHABLE
from .peers import PeerTable


async def _one(table: PeerTable, name: str, path: str, headers: dict[str, str]) -> PeerAnswer:
    peer = table.peers.get(name)
    if peer is None or not peer.online:
        # Offline peers are not called; they are reported so the answer is marked partial.
        return PeerAnswer(name, reason=UNREACHABLE)
    try:
        body = await peer.client.read_items(path, headers)
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
    """Answers of (peer name, path, headers) calls made in parallel, in call order.

    One deadline bounds every call (no timer per peer); a call still running at the deadline
    is cancelled and answers `timeout`.
    """
    if not calls:
        return []
    tasks = [asyncio.ensure_future(_one(table, name, path, headers))
             for name, path, headers in calls]
    try:
        _done, pending = await asyncio.wait(tasks, timeout=budget_s)
    except asyncio.CancelledError:
        for t in tasks:
            t.cancel()
        raise
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.wait(pending)
    out: list[PeerAnswer] = []
    for (name, _, _), task in zip(calls, tasks, strict=True):
        if task in pending:
            table.suspect(name)
            out.append(PeerAnswer(name, reason=TIMEOUT))
            continue
        exc = None if task.cancelled() else task.exception()
        if task.cancelled() or isinstance(exc, asyncio.CancelledError):
            out.append(PeerAnswer(name, reason=CANCELED))
        elif exc is not None:
            out.append(PeerAnswer(name, reason=UNREACHABLE))
        else:
            out.append(task.result())
    return out
