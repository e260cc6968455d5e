"""The hearing checks of the gateway's DDS side (decisions: hearing.py) and what follows
from them: /health degraded with the reason, a warning, and a rejoin (ros/dds/bridge.py) under
`ros.rejoin.enabled` and `ros.rejoin.min_interval_sec`, shared with the frozen-participant
rejoins (frozen.py).

The participants sign comes from the frozen-participant checks (frozen_loop.py), which run
only after graph changes and while participants bound on this host are not discovered: an
idle gateway that hears pays nothing for it. The samples and callbacks signs are checked every
ECHO_EVERY_S: one wake of the event loop, one of each executor, and no graph query.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

from .frozen import FrozenWatch, prefix_pid_key
from .hearing import ECHO_EVERY_S, SILENT_MIN_S, Hearing, silent_topics
from .hearing_probe import Echo, probe

log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 15.0  # a probe's budget plus making and closing its participant
RECHECK_S = 1.0


class HearingLoop:
    """Runs the checks, keeps the state (`state`), re-joins DDS when deaf."""

    def __init__(self, bridge: Any, watch: FrozenWatch) -> None:
        self.bridge = bridge
        self.watch = watch  # its rejoin switch and interval, and the rejoins it counts
        self.state = Hearing(own_pid=os.getpid())
        self.rejoins = 0  # rejoins made because the gateway was deaf
        self._echoes: list[Echo] = []
        self._back: dict[str, int] = {}  # executor -> echoes come back
        self._counted: dict[str, int] = {}  # ... as counted at the previous round
        self._task: asyncio.Task[None] | None = None
        self._busy = False  # a probe or a rejoin runs
        bridge.hearing = self

    def start(self) -> None:
        """Start the periodic checks (on the running loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="hearing")

    async def stop(self) -> None:
        """Stop checking."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    @property
    def deaf(self) -> bool:
        """True while the gateway's DDS side is known not to hear."""
        return self.state.deaf

    def health(self) -> dict[str, Any]:
        """For /health (x-vendor-readiness.hearing)."""
        return {**self.state.health(), "rejoins": self.rejoins,
                "echoes": {name: self._back.get(name, 0) for name in
                           (e.name for e in self._echoes)}}

    # echoes -------------------------------------------------------------------------------

    def _echoed(self, name: str) -> None:
        self._back[name] = self._back.get(name, 0) + 1

    def _make_echoes(self) -> None:
        loop = asyncio.get_running_loop()

        def back(name: str) -> None:
            try:
                loop.call_soon_threadsafe(self._echoed, name)
            except RuntimeError:  # the loop closed (shutdown)
                pass

        bridge = self.bridge
        # A guard condition through the wait-set executor; the events executor runs no guard
        # conditions (rclpy raises in its thread), so a timer there, twice per round.
        self._echoes = [Echo("ros-executor", lambda: bridge.node.current, back)]
        self._echo_locks = {"ros-executor": getattr(bridge.node, "lock", None)}
        if bridge.call_node is not bridge.node:
            self._echoes.append(Echo("ros-calls", lambda: bridge.call_node.current, back,
                                     timer_s=ECHO_EVERY_S / 2))
            self._echo_locks["ros-calls"] = getattr(bridge.call_node, "lock", None)

    async def _echo_round(self) -> None:
        """Account the echoes of the last round and send the next ones."""
        if not self._echoes:
            self._make_echoes()
        for echo in self._echoes:
            back = self._back.get(echo.name, 0)
            if echo.armed and not echo.stale():  # the previous round sent one
                self.state.echo(echo.name, back > self._counted.get(echo.name, 0))
            self._counted[echo.name] = back
            try:
                if echo.stale():
                    await self.bridge.run(echo.ensure, self._echo_locks.get(echo.name),
                                          timeout=10.0, what="making the hearing echo")
                echo.trigger()
            except Exception as exc:
                log.debug("hearing echo %s: %s", echo.name, exc)
                echo.armed = False

    # samples ------------------------------------------------------------------------------

    async def _silence_round(self) -> None:
        pool = getattr(self.bridge, "sample_pool", None)
        if pool is None:
            return
        stats = pool.receive_times()
        silent = silent_topics(stats, time.time_ns())
        state = self.state
        state.sample_received([t for t in {*state.silent, *state.silent_rechecking}
                               if t not in silent])
        since_rejoin = None if state.rejoined_at is None else \
            time.monotonic() - state.rejoined_at
        recheck = since_rejoin is None or since_rejoin >= SILENT_MIN_S
        ask = {t: s for t, s in silent.items() if t not in state.silent
               and (recheck or t not in state.silent_rechecking)}
        if not ask or self._busy:
            return
        with_publishers = await self.bridge.run(pool.published, list(ask), timeout=10.0,
                                                what="counting publishers")
        state.sample_received([t for t in ask if t not in with_publishers])
        ask = {t: s for t, s in ask.items() if t in with_publishers}
        if not ask:
            return
        types = {t: pool.type_of(t) for t in ask}
        ask = {t: s for t, s in ask.items() if types[t] is not None}
        if not ask:
            return
        result = await self._probe(topics=[(t, types[t]) for t in ask])
        if result is not None:
            state.probed_topics(ask, {t: s for t, s in ask.items() if t in result.topics})

    # participants -------------------------------------------------------------------------

    async def observe_graph(self, owners: Mapping[int, str], prefixes: Iterable[bytes],
                            now: float) -> None:
        """One frozen-participant check's findings (frozen_loop.py): the processes holding
        participant ports and the participants discovered."""
        keys = {k for k in map(prefix_pid_key, prefixes) if k is not None}
        due = self.state.observe_graph(owners, keys, self.watch.known, now)
        if due and not self._busy:
            result = await self._probe(want_keys={pid & 0xFFFF for pid in due})
            if result is not None:
                heard = {k for k in map(prefix_pid_key, result.prefixes) if k is not None}
                self.state.probed_graph(due, heard, time.monotonic())
        await self._act()

    def watching(self) -> bool:
        """Whether the frozen-participant checks should go on for hearing's sake."""
        return self.state.watching()

    # acting -------------------------------------------------------------------------------

    async def _probe(self, want_keys: Iterable[int] = (),
                     topics: Iterable[tuple[str, str]] = ()) -> Any:
        self._busy = True
        try:
            return await self.bridge.run(probe, self.bridge.domain_id, list(want_keys),
                                         list(topics), timeout=PROBE_TIMEOUT_S,
                                         what="asking a fresh DDS participant")
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("hearing probe failed")
            return None
        finally:
            self._busy = False

    async def _act(self) -> None:
        event = self.state.update(time.monotonic(), time.time())
        if event == "deaf":
            log.warning("the gateway's DDS participant does not hear the graph: %s; %s",
                        self.state.reason, "re-joining DDS with a new participant"
                        if self.watch.enabled else "ros.rejoin.enabled is false: no rejoin")
        elif event == "recovered":
            log.warning("the gateway's DDS participant hears the graph again (deaf %.1f s)",
                        self.state.last_recovery_s or 0.0)
        if not self.state.needs_rejoin or self._busy:
            return
        now = time.monotonic()
        if not self.watch.enabled or (self.watch.last_rejoin is not None and
                                      now - self.watch.last_rejoin < self.watch.min_interval_s):
            return
        self._busy = True
        try:
            took = await self.bridge.rejoin()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.watch.rejoined((), time.monotonic(), time.time(), None, ok=False)
            log.exception("rejoin for deafness failed")
            return
        finally:
            self._busy = False
        self.rejoins += 1
        self.watch.rejoined((), time.monotonic(), time.time(), round(took, 3))
        log.warning("re-joined DDS with a new participant in %.2f s (deaf: %s)", took,
                    self.state.reason)

    def lost(self, pids: Iterable[int]) -> None:
        """The frozen-participant check re-joins for these running pids: deaf to them."""
        self.state.lost(pids)
        self.state.update(time.monotonic(), time.time())

    def rejoined(self) -> None:
        """Any rejoin (RosBridge.rejoin): check again what made it deaf; new executors."""
        self.state.rejoined(time.monotonic())
        self._back.clear()
        self._counted.clear()
        for echo in self._echoes:
            echo.armed = False

    def rejoined_by_hook(self, took: float) -> None:
        """A test hook's rejoin (ros/rejoin/testhooks.py): counted like the others."""
        self.watch.rejoined((), time.monotonic(), time.time(), round(took, 3))

    async def _run(self) -> None:
        echoed = time.monotonic()
        while True:
            # while deaf the samples are looked at every RECHECK_S (is it over?)
            await asyncio.sleep(RECHECK_S if self.state.deaf else ECHO_EVERY_S)
            try:
                if time.monotonic() - echoed >= ECHO_EVERY_S * 0.9:
                    echoed = time.monotonic()
                    await self._echo_round()
                await self._silence_round()
                await self._act()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("hearing check failed")
