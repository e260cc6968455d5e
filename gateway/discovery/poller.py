"""Polls the ROS graph, diffs snapshots, and refreshes the entity cache with a debounce."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from ..events import GRAPH, Event, EventBus, GraphChanged
from ..ros.dds.bridge import RosBridge
from ..ros.graph.census import Census, take_census
from ..ros.graph.graph_query import take_snapshot
from ..ros.graph.snapshot import GraphSnapshot
from ..ros.rejoin import portcensus
from ..ros.rejoin.frozen_loop import FrozenLoop, bound_and_discovered
from ..ros.rejoin.unseen import CHECK_EVERY_S, UnseenParticipants
from ..ros.topics.pool import SamplePool
from .cache import EntityCache
from .graph_wake import GraphWake
from .readiness import Readiness
from .runclock import RunClock

log = logging.getLogger(__name__)

# Right after start DDS discovery is still filling the graph: every change is applied at
# once for this long (the debounce is for churn later on, not for the first sight of a robot).
STARTUP_UNDEBOUNCED_S = 3.0
# Until ready the graph is polled this often (at most), so the first listing is complete early.
STARTING_POLL_S = 0.05
# A graph unchanged this long is idle: polled every discovery.idle_poll_interval_ms.
IDLE_AFTER_S = 10.0


def poll_delay(interval_s: float, idle_interval_s: float, unchanged_s: float,
               pending: bool) -> float:
    """Seconds to the next poll of a ready gateway: the idle period once the graph has not
    changed for IDLE_AFTER_S and nothing waits to be applied."""
    if pending or unchanged_s < IDLE_AFTER_S:
        return interval_s
    return max(interval_s, idle_interval_s)


def _starting_poll(node: Any, own_topics: frozenset[str], domain_id: int | None
                   ) -> tuple[GraphSnapshot, Census, tuple[int | None, str | None]]:
    # The ports first: a participant bound after them is then counted by the census anyway.
    local = portcensus.census(domain_id) if domain_id is not None else (
        None, "the DDS domain id is not known")
    return take_snapshot(node, own_topics), take_census(node), local


def _unseen_check(node: Any, domain_id: int) -> tuple[int | None, int]:
    bound, discovered = bound_and_discovered(node, domain_id)
    return bound, len(discovered)


def unseen_reason(owners: dict[int, str]) -> str:
    """Why participants bound on this host may be undiscovered, from the states of the
    processes holding their ports (pid -> state letter)."""
    stopped = sorted(pid for pid, state in owners.items() if state in ("T", "t"))
    if stopped:
        return (f"process(es) {', '.join(map(str, stopped))} holding participant ports are "
                "stopped: a node frozen past its lease, listed again when it resumes (or the "
                "gateway re-joins)")
    return ("every process holding participant ports is running: a DDS participant that is "
            "not a ROS one (no endpoints, no node list), or one DDS does not rediscover (a "
            "node frozen past its lease earlier); its nodes stay unlisted until the gateway "
            "or the node is restarted")


class GraphPoller:
    """Background task: graph poll every interval; entity refresh at most once per debounce."""

    def __init__(self, bridge: RosBridge, pool: SamplePool, cache: EntityCache,
                 interval_s: float, debounce_s: float, idle_interval_s: float = 0.0,
                 watched_idle_interval_s: float = 0.0, bus: EventBus | None = None) -> None:
        self.bridge = bridge
        # Each changed snapshot is published on it (GRAPH, GraphChanged), on the event loop:
        # e.g. ros/calls/callbuild.py's prefetch, the empty-domain warning.
        self.bus = bus
        self.idle_interval_s = idle_interval_s
        # Idle with graph changes watched (graph_wake.py): polled this often, and at a change.
        self.watched_idle_interval_s = watched_idle_interval_s
        self.wake = GraphWake(bridge, watched_idle_interval_s > 0 and idle_interval_s > 0)
        self.idle = False  # the graph has not changed for IDLE_AFTER_S: polled slowly
        self.pool = pool
        self.cache = cache
        self.interval_s = interval_s
        self.debounce_s = debounce_s
        self.events = 0
        self.first = asyncio.Event()
        self.ready = asyncio.Event()  # discovery settled (readiness.py): /health says so
        # Counted from the creation of the gateway's DDS participant (readiness.py).
        self.readiness = Readiness(getattr(bridge, "created", time.monotonic()),
                                   closed=portcensus.closed_world(os.environ))
        self._census: Census | None = None
        self._local: int | None = None  # participants bound on this host (ros/rejoin/portcensus.py)
        self._local_why: str | None = None  # why they could not be counted
        self.unseen = UnseenParticipants()  # bound here but not discovered (ros/rejoin/unseen.py)
        self._unseen_checked = 0.0
        self.frozen = FrozenLoop(bridge)  # resumed, not rediscovered (ros/rejoin/frozen_loop.py)
        self._last: GraphSnapshot | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start polling."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="graph-poller")

    async def stop(self) -> None:
        """Stop polling."""
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.frozen.stop()
        self.wake.stop()

    def health(self) -> dict[str, Any]:
        """How discovery became ready (for /health): reason, time since the participant was
        made, DDS participants discovered."""
        r = self.readiness
        return {"reason": r.reason or None,
                "ready_after_s": round(r.ready_at - r.start, 3) if r.ready_at is not None
                else None,
                "dds_participants": len(self._census.participants) if self._census else 0,
                "participants_with_nodes_known": len(self._census.with_nodes)
                if self._census else 0,
                "participants_on_this_host": self._local,
                # checks that could not run (readiness decided without them), and why
                "checks_not_run": [] if self._local_why is None else [
                    {"check": "port_census", "reason": self._local_why}],
                **self.unseen.health(), **self.frozen.health(), **self.wake.health(),
                "graph_idle": self.idle}

    async def _check_unseen(self) -> None:
        """Compare the participants bound on this host with those discovered; warn once when
        some stay unseen past the window (ros/rejoin/unseen.py)."""
        domain_id = getattr(self.bridge, "domain_id", None)
        if domain_id is None or self._local_why is not None:
            return  # the ports cannot be counted here
        bound, known = await self.bridge.run(_unseen_check, self.bridge.node, domain_id,
                                             timeout=10.0)
        event = self.unseen.observe(bound, known, time.monotonic(), time.time())
        if self.unseen.short:
            self.frozen.kick(window=False)
        if event == "unseen":
            owners = await self.bridge.run(portcensus.participant_owners, domain_id, {},
                                           timeout=10.0)
            log.warning("%d DDS participant(s) bound on this host for over %.0f s are not "
                        "discovered by the gateway's DDS participant (%s bound, %d discovered): "
                        "%s", self.unseen.unseen, self.unseen.window_s, bound, known,
                        unseen_reason(owners))
        elif event == "cleared":
            log.info("every DDS participant bound on this host is discovered again")

    async def poll_once(self) -> GraphSnapshot:
        """Take one snapshot (in a worker thread)."""
        return await self.bridge.run(take_snapshot, self.bridge.node, self.pool.topics,
                                     timeout=10.0)

    async def _poll_starting(self) -> tuple[GraphSnapshot, bool]:
        """A snapshot and the participant census; (snapshot, census changed)."""
        snap, census, (local, why) = await self.bridge.run(
            _starting_poll, self.bridge.node, self.pool.topics,
            getattr(self.bridge, "domain_id", None), timeout=10.0)
        changed = census != self._census
        self._census = census
        if why is not None and why != self._local_why:
            log.warning("readiness: participants on this host not counted: %s", why)
        self._local, self._local_why = local, why
        return snap, changed

    async def _run(self) -> None:
        pending: GraphSnapshot | None = None
        last_apply = 0.0
        started = time.monotonic()
        census_changed = False
        last_change = started
        run_clock = RunClock()  # of the event-loop thread (readiness.py)
        poll = True  # False: woken only for the unseen check of a watched idle graph
        polled = started  # when the graph was last queried
        while True:
            starting = not self.ready.is_set()
            began = time.monotonic()
            self.wake.changed.clear()  # a change from here on wakes the next wait
            try:
                if starting:
                    snap, census_changed = await self._poll_starting()
                elif poll or self._last is None:
                    polled = began
                    snap = await self.poll_once()
                else:
                    snap = self._last
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("graph poll failed")
                await asyncio.sleep(self.interval_s)
                continue
            changed = snap != self._last
            if changed or starting:
                last_change = time.monotonic()
            if changed and not starting:  # a participant may have lost its lease
                self.frozen.kick()
            if changed:
                if self._last is not None:
                    self.events += 1
                self._last = snap
                pending = snap
                bus = self.bus
                if bus is not None and bus.has_listeners(GRAPH):
                    bus.publish(Event(GRAPH, None, "ros", "changed", GraphChanged(snap)))
            now = time.monotonic()
            # While starting, every change is applied at once: no debounce before readiness
            # (and none for the first seconds, so the first listing is complete early).
            if pending is not None and (starting or now - started < STARTUP_UNDEBOUNCED_S
                                        or now - last_apply >= self.debounce_s):
                self.cache.apply(pending)
                log.debug("entities refreshed: generation %d, %d apps", self.cache.generation,
                          len(self.cache.entities.apps))
                pending = None
                last_apply = now
                self.first.set()
            census = self._census
            participants = len(census.participants) if census is not None else 0
            if starting and self.readiness.observe(
                    changed or census_changed, run_clock.now(now),
                    census is not None and census.complete, wall=now,
                    others=max(0, participants - 1), local=self._local):
                log.info("discovery %s: %d apps, %d DDS participants (%s on this host); "
                         "ready after %.2f s", self.readiness.reason,
                         len(self.cache.entities.apps), participants,
                         "?" if self._local is None else self._local,
                         now - self.readiness.start)
                self.ready.set()
            if self.ready.is_set() and now - self._unseen_checked >= CHECK_EVERY_S:
                self._unseen_checked = now
                try:
                    await self._check_unseen()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("unseen-participant check failed")
            if self.ready.is_set():
                delay = poll_delay(self.interval_s, self.idle_interval_s, now - last_change,
                                   pending is not None)
                self.idle = delay > self.interval_s
                if self.idle and self.wake.active():  # idle, changes wake it
                    poll_at = polled + max(delay, self.watched_idle_interval_s)
                    check_at = self._unseen_checked + CHECK_EVERY_S
                    woke = await self.wake.wait(min(poll_at, check_at) - time.monotonic())
                    poll = woke or time.monotonic() >= poll_at
                else:
                    poll = True
                    await asyncio.sleep(delay)
            else:  # fast, but a big graph's polls take at most a third of the time
                await asyncio.sleep(min(self.interval_s,
                                        max(STARTING_POLL_S, 2 * (now - began))))
