"""Checks, after graph changes and while participants are undiscovered, whether a resumed
process needs the gateway to re-join DDS (the decision: frozen.py; the rejoin: ros/dds/bridge.py).

A participant frozen past its lease drops from the graph (a change), so every graph change
opens a WINDOW_S of checks every FAST_CHECK_S: the ports bound on this host against the
participants discovered, and only while more are bound, the processes holding them
(/proc, ros/rejoin/portcensus.py). Participants back from a lost lease are checked too, for
endpoints DDS did not rediscover (ros/graph/orphans.py). An idle graph costs nothing here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from ...process.waits import wait_event
from ..graph.census import take_census
from ..graph.discovery_info import tracker_of
from ..graph.orphans import missing_endpoints
from . import portcensus
from .frozen import FAST_CHECK_S, INCOMPLETE_GRACE_S, FrozenWatch
from .hearing_loop import HearingLoop

log = logging.getLogger(__name__)
WINDOW_S = 15.0  # checks go on this long after a graph change (a lease is 3-10 s)


def bound_and_discovered(node: Any, domain_id: int) -> tuple[int | None, frozenset[bytes]]:
    """The participants bound on this host (by their ports; None: unknown) and the GUID
    prefixes of those the node's DDS participant discovered."""
    # The ports first: a participant bound after them is then counted as discovered anyway.
    bound = portcensus.local_participants(domain_id)
    return bound, take_census(node).participants


def incomplete(node: Any, alive: frozenset[bytes]) -> dict[bytes, tuple[int, int]]:
    """Participants back from a lost lease whose announced endpoints DDS has not all
    rediscovered: GUID prefix -> (readers, writers) missing (blocking)."""
    tracker = tracker_of(node)
    returned = [] if tracker is None else tracker.returned_recently(alive)
    return missing_endpoints(node, returned) if returned else {}


def _check(node: Any, domain_id: int, inodes: dict[int, int]
           ) -> tuple[frozenset[bytes], int, dict[int, str], dict[bytes, tuple[int, int]]]:
    bound, prefixes = bound_and_discovered(node, domain_id)
    short = 0 if bound is None else max(0, bound - len(prefixes))
    owners = portcensus.participant_owners(domain_id, inodes) if short else {}
    return prefixes, short, owners, incomplete(node, prefixes)


class FrozenLoop:
    """The background checks and the rejoins they call for."""

    def __init__(self, bridge: Any) -> None:
        self.bridge = bridge
        self.watch = FrozenWatch(getattr(bridge, "rejoin_enabled", False),
                                 getattr(bridge, "rejoin_min_interval_s", 5.0),
                                 own_pid=os.getpid())
        self._inodes: dict[int, int] = {}  # socket inode -> pid, kept while they hold
        self._until = 0.0
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None  # a kick checks at once
        # Whether the gateway's DDS side still hears (hearing_loop.py): its participants sign
        # comes from these checks, its other signs from its own slow round.
        self.hearing = HearingLoop(bridge, self.watch)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            self.hearing.start()

    def kick(self, window: bool = True) -> None:
        """A graph change (window: check often for a while) or a shortfall seen by the slow
        check (one check now, more only while a process may need a rejoin)."""
        domain_id = getattr(self.bridge, "domain_id", None)
        if domain_id is None:  # (with rejoins off the checks still tell whether it hears)
            return
        if window:
            self._until = time.monotonic() + WINDOW_S
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(domain_id), name="frozen-participants")

    async def stop(self) -> None:
        """Stop checking."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.hearing.stop()

    async def _run(self, domain_id: int) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            now = time.monotonic()
            short, missing = 0, {}
            try:
                prefixes, short, owners, missing = await self.bridge.run(
                    _check, self.bridge.node, domain_id, self._inodes, timeout=10.0)
                due = self.watch.observe(owners, prefixes, now)
                late = self.watch.observe_incomplete(missing, now)
                if due:
                    await self._rejoin(due, owners)
                elif late:
                    await self._rejoin_incomplete(late, missing)
                else:
                    await self.hearing.observe_graph(owners, prefixes, now)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("frozen-participant check failed")
            if now >= self._until and not ((short or missing) and self.watch.watching()) \
                    and not (short and self.hearing.watching()):
                return
            await wait_event(self._wake, FAST_CHECK_S)

    async def _rejoin(self, pids: list[int], owners: dict[int, str]) -> None:
        self.hearing.lost(pids)  # /health: degraded until the new participant hears them
        names = ", ".join(f"pid {pid} ({_comm(pid)})" for pid in pids)
        log.warning("DDS participant(s) of %s resumed but not rediscovered for %.1f s: "
                    "re-joining DDS with a new participant", names, self.watch.grace_s)
        await self._rejoin_for(names, pids=pids)

    async def _rejoin_incomplete(self, prefixes: list[bytes],
                                 missing: dict[bytes, tuple[int, int]]) -> None:
        names = ", ".join(f"{p.hex()} ({missing[p][0]} readers, {missing[p][1]} writers "
                          "missing)" for p in prefixes)
        log.warning("DDS participant(s) %s came back without all of their endpoints for %.1f s:"
                    " re-joining DDS with a new participant", names, INCOMPLETE_GRACE_S)
        await self._rejoin_for(names, prefixes=prefixes)

    async def _rejoin_for(self, names: str, pids: Sequence[int] = (),
                          prefixes: Sequence[bytes] = ()) -> None:
        try:
            took = await self.bridge.rejoin()
        except Exception:
            self.watch.rejoined(pids, time.monotonic(), time.time(), None, ok=False,
                                prefixes=prefixes)
            log.exception("rejoin failed; the nodes of %s stay unlisted until the gateway or "
                          "the node is restarted", names)
            return
        self.watch.rejoined(pids, time.monotonic(), time.time(), round(took, 3),
                            prefixes=prefixes)
        log.warning("re-joined DDS with a new participant in %.2f s (rejoin %d): %d "
                    "subscriptions, publishers and services moved", took, self.watch.rejoins,
                    self.bridge.node.replayed + (self.bridge.call_node.replayed
                                                 if self.bridge.call_node is not
                                                 self.bridge.node else 0))

    def health(self) -> dict[str, Any]:
        """For /health (x-vendor-readiness)."""
        return {**self.watch.health(), "hearing": self.hearing.health()}


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().decode(errors="replace").replace("\0", " ").split()
    except OSError:
        return "gone"
    return " ".join(words)[:80] or "?"
