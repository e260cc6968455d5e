"""Parallel peer calls for a collection read: every peer within its budget, never their sum.

A call to a peer with an idle pooled connection is sent at once, its answer handed over by
the connection itself (no task nor future per peer); one deadline bounds every call. A peer answering the same bytes
as last time gets the answer object it got then (parsed once, and prepared once by
combine.py for the same fleet view).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from .client import PeerError, list_envelope, raw_error
from .combine import PeerAnswer
from .health import CANCELED, TIMEOUT, UNREACHABLE
from .peers import Peer, PeerTable
from .rawhttp import Unsupported

MAX_MEMO = 64  # answers remembered per peer (by path)
_Call = tuple[str, str, dict[str, str]]


def _answer(peer: Peer, path: str, status: int, raw: bytes) -> PeerAnswer:
    """The peer's answer for these bytes: the one it gave last time when they are the same.
    An answer under 500 shows the peer's HTTP stack serves (peers.py `answered_at`)."""
    if status < 500:
        peer.answered_at = time.monotonic()
    memo = peer.answers.get(path)
    if memo is not None and memo[0] == status and memo[1] == raw:
        return memo[2]
    body = list_envelope(status, raw)  # PeerError when unusable (never remembered)
    if body is None:
        answer = PeerAnswer(peer.name, body={"omitted": True})
    else:
        answer = PeerAnswer(peer.name, items=body["items"], body=body)
    if len(peer.answers) >= MAX_MEMO:
        peer.answers.clear()
    peer.answers[path] = (status, raw, answer)
    return answer


def _failed(table: PeerTable, name: str, exc: PeerError) -> PeerAnswer:
    if exc.reason in (TIMEOUT, UNREACHABLE):
        table.suspect(name)
    return PeerAnswer(name, reason=exc.reason)


async def _one(table: PeerTable, peer: Peer, path: str, headers: dict[str, str]
               ) -> PeerAnswer:
    """A call that needs a connection made first (or the general client)."""
    try:
        status, raw = await peer.client.read_raw(path, headers)
        return _answer(peer, path, status, raw)
    except PeerError as exc:
        return _failed(table, peer.name, exc)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return PeerAnswer(peer.name, reason=CANCELED)


class _Batch:
    """Answers of the calls sent at once; `all` completes when each has come."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.left = 0
        self.all: asyncio.Future[None] = loop.create_future()
        self.got: dict[int, tuple[Any, tuple[int, bytes] | None, BaseException | None]] = {}

    def arrived(self, conn: Any, result: tuple[int, bytes] | None,
                exc: BaseException | None) -> None:
        self.got[conn.tag] = (conn, result, exc)
        self.left -= 1
        if self.left <= 0 and not self.all.done():
            self.all.set_result(None)

    def expire(self) -> None:
        if not self.all.done():
            self.all.set_result(None)


async def gather(table: PeerTable, calls: Sequence[_Call], budget_s: float
                 ) -> list[PeerAnswer]:
    """Answers of (peer name, path, headers) calls made in parallel, in call order.

    One deadline bounds every call (no timer per peer); a call still running at the deadline
    is cancelled and answers `timeout`.
    """
    if not calls:
        return []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s
    out: list[PeerAnswer | None] = [None] * len(calls)
    batch = _Batch(loop)
    sent: dict[int, tuple[Peer, Any]] = {}
    tasks: dict[int, asyncio.Future[PeerAnswer]] = {}
    for i, (name, path, headers) in enumerate(calls):
        peer = table.peers.get(name)
        if peer is None or not peer.online:
            # Offline peers are not called; they are reported so the answer is marked partial.
            out[i] = PeerAnswer(name, reason=UNREACHABLE)
            continue
        conn = peer.client.send_read(path, headers, batch.arrived, i)
        if conn is not None:
            sent[i] = (peer, conn)
            batch.left += 1
        else:
            tasks[i] = asyncio.ensure_future(_one(table, peer, path, headers))
    timer = loop.call_at(deadline, batch.expire)
    try:
        if batch.left > 0:
            await batch.all
        for i, (conn, result, exc) in batch.got.items():
            peer = sent.pop(i)[0]
            peer.client.finish_read(conn, exc is None)
            _name, path, headers = calls[i]
            if result is not None:
                try:
                    out[i] = _answer(peer, path, *result)
                except PeerError as err:
                    out[i] = _failed(table, peer.name, err)
            elif isinstance(exc, Unsupported):  # the general client reads it
                tasks[i] = asyncio.ensure_future(_one(table, peer, path, headers))
            else:
                out[i] = _failed(table, peer.name, raw_error(exc or ConnectionError()))
        late = [t for i, t in tasks.items() if out[i] is None and not t.done()]
        left = deadline - loop.time()
        if late and left > 0:
            await asyncio.wait(late, timeout=left)
    except asyncio.CancelledError:
        for t in tasks.values():
            t.cancel()
        raise
    finally:
        timer.cancel()
        for peer, conn in sent.values():  # still unanswered: never reused
            peer.client.finish_read(conn, False)
    for i, task in tasks.items():
        if out[i] is None and not task.done():
            task.cancel()
    pending = [t for t in tasks.values() if not t.done()]
    if pending:
        await asyncio.wait(pending)
    answers: list[PeerAnswer] = []
    for i, (name, _, _) in enumerate(calls):
        answer = out[i]
        if answer is None:
            answer = _unanswered(table, name, tasks.get(i))
        answers.append(answer)
    return answers


def _unanswered(table: PeerTable, name: str, task: asyncio.Future[PeerAnswer] | None
                ) -> PeerAnswer:
    """The answer of a call still without one once the wait is over."""
    if task is None or task.cancelled():
        # sent on a pooled connection and unanswered at the deadline, or cut off by it
        table.suspect(name)
        return PeerAnswer(name, reason=TIMEOUT)
    exc = task.exception()
    if isinstance(exc, asyncio.CancelledError):
        return PeerAnswer(name, reason=CANCELED)
    if exc is not None:
        return PeerAnswer(name, reason=UNREACHABLE)
    return task.result()
