"""Whether the gateway's DDS side still hears the graph (pure decisions; the checks:
hearing_loop.py).

A participant can go deaf while its process runs on: it still sends (its nodes stay on other
participants' graphs), but nothing it is sent is processed, so samples stop, calls time out,
reports go unacknowledged and new nodes are never listed, while every cached answer still
looks fine. Three signs, each cheap while the gateway hears:

- **Participants**: every participant announces itself periodically; a deaf participant drops
  them once their lease runs out. Participants bound on this host (ros/rejoin/portcensus.py) whose
  process runs (not stopped) and which the gateway's participant does not discover are
  candidates after KNOWN_SUSPECT_S (discovered before) or NEW_SUSPECT_S (never discovered: a
  process starting is bound before it is discovered). A candidate is confirmed from outside:
  a short-lived fresh participant (ros/rejoin/hearing_probe.py) discovers it. A participant no fresh
  participant discovers either (not a ROS one, a process with a broken DDS) is excused until
  the set of candidates changes.
- **Samples**: a pooled topic that received samples regularly, still has publishers and has
  been silent for SILENT_PERIODS of its usual period (at least SILENT_MIN_S) is a candidate,
  confirmed when the fresh participant receives a sample of it.
- **Callbacks**: an echo through each executor (a guard condition triggered from the event
  loop every ECHO_EVERY_S) that does not come back for ECHO_MISSES periods.

Deaf: /health degraded with the reason, one warning, a rejoin (under ros.rejoin's switch and
interval); the state clears once the sign is gone (the candidates discovered, a sample
received, the echo back).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

KNOWN_SUSPECT_S = 3.0  # a participant discovered before, gone while its process runs
NEW_SUSPECT_S = 10.0  # a participant bound this long and never discovered
MIN_CHECKS = 3  # consecutive checks that must agree before a fresh participant is asked
EXCUSE_S = 300.0  # a candidate no fresh participant heard either is asked about again after this
SILENT_MIN_S = 15.0
SILENT_PERIODS = 20.0
SILENT_MIN_SAMPLES = 8  # a topic needs this many recent samples to have a usual period
ECHO_EVERY_S = 10.0
ECHO_MISSES = 3
STOPPED_OR_GONE = ("T", "t", "Z", "X")


def _utc(wall: float | None) -> str | None:
    if wall is None:
        return None
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z")


def silent_topics(stats: Mapping[str, tuple[tuple[int, ...], int]], now_ns: int
                  ) -> dict[str, float]:
    """Topics whose samples stopped (topic -> seconds silent), from each topic's recent
    receive times (ns, oldest first) and receive count."""
    silent: dict[str, float] = {}
    for topic, (recent, _count) in stats.items():
        if len(recent) < SILENT_MIN_SAMPLES:
            continue
        gaps = sorted(b - a for a, b in zip(recent, recent[1:], strict=False))
        period_s = gaps[len(gaps) // 2] / 1e9
        quiet_s = (now_ns - recent[-1]) / 1e9
        if quiet_s >= max(SILENT_MIN_S, SILENT_PERIODS * period_s):
            silent[topic] = quiet_s
    return silent


class Hearing:
    """The hearing state of the gateway's DDS side: candidates, confirmations, deafness."""

    def __init__(self, own_pid: int | None = None) -> None:
        self.own_pid = own_pid
        self.unheard_since: dict[int, float] = {}  # candidate pid -> first seen unheard
        self.checks = 0  # consecutive checks with the same candidates
        self._last_unheard: frozenset[int] = frozenset()
        self.excused: dict[int, float] = {}  # pid -> when a fresh participant missed it too
        self.confirmed: set[int] = set()  # pids a fresh participant heard and we do not
        self.rechecking: set[int] = set()  # confirmed before the last rejoin: heard now?
        self.silent: dict[str, float] = {}  # topics heard by a fresh participant, not by us
        self.silent_rechecking: set[str] = set()  # silent before the last rejoin
        self.rejoined_at: float | None = None  # monotonic
        self.echo_missing: dict[str, int] = {}  # executor -> echoes not come back in a row
        self.reason: str | None = None  # why deaf (None: hearing)
        self.since: float | None = None  # wall clock of the current deafness
        self.deaf_events = 0
        self.recoveries = 0
        self.probes = 0
        self.last_deaf: float | None = None  # wall
        self.last_recovered: float | None = None  # wall
        self.last_recovery_s: float | None = None  # how long the last deafness lasted

    @property
    def deaf(self) -> bool:
        """True while a confirmed sign of deafness lasts."""
        return self.reason is not None

    # participants -------------------------------------------------------------------------

    def observe_graph(self, owners: Mapping[int, str], discovered_keys: Iterable[int],
                      known_keys: Iterable[int], now: float) -> list[int]:
        """Account one check (owners: pid -> state of the processes holding participant ports;
        discovered_keys / known_keys: pid keys of the participants discovered now / before);
        the candidate pids to ask a fresh participant about now (empty: none)."""
        seen = set(discovered_keys)
        known = set(known_keys)
        unheard = frozenset(pid for pid, state in owners.items()
                            if pid != self.own_pid and state not in STOPPED_OR_GONE
                            and pid & 0xFFFF not in seen)
        for pid in list(self.unheard_since):
            if pid not in unheard:
                del self.unheard_since[pid]
        for pid in list(self.excused):
            if pid not in unheard or now - self.excused[pid] >= EXCUSE_S:
                del self.excused[pid]
        self.confirmed &= unheard
        self.rechecking &= unheard
        self.checks = self.checks + 1 if unheard == self._last_unheard else 1
        self._last_unheard = unheard
        due = []
        for pid in sorted(unheard - self.confirmed):
            since = self.unheard_since.setdefault(pid, now)
            wait = KNOWN_SUSPECT_S if pid & 0xFFFF in known or pid in self.rechecking \
                else NEW_SUSPECT_S
            if pid not in self.excused and pid not in self.confirmed and now - since >= wait:
                due.append(pid)
        return due if due and self.checks >= MIN_CHECKS else []

    def probed_graph(self, asked: Iterable[int], heard_keys: Iterable[int], now: float) -> None:
        """A fresh participant was asked about these pids and discovered those pid keys."""
        self.probes += 1
        heard = set(heard_keys)
        for pid in asked:
            self.rechecking.discard(pid)
            if pid & 0xFFFF in heard:
                self.confirmed.add(pid)
            else:
                self.excused[pid] = now

    def lost(self, pids: Iterable[int]) -> None:
        """Participants of running processes the frozen-participant check is re-joining for
        (frozen.py: its own rule confirms them)."""
        self.confirmed |= set(pids)

    def rejoined(self, now: float) -> None:
        """A rejoin was made: what was confirmed is checked again with the new participant
        (the state stays deaf until then); the executors are new."""
        self.rejoined_at = now
        self.rechecking |= self.confirmed
        for pid in self.confirmed:
            self.unheard_since[pid] = now
        self.confirmed.clear()
        self.silent_rechecking |= set(self.silent)
        self.silent.clear()
        self.echo_missing.clear()

    @property
    def needs_rejoin(self) -> bool:
        """Whether a confirmed sign (not one being checked again) calls for a rejoin."""
        return bool(self.confirmed or self.silent or any(
            n >= ECHO_MISSES for n in self.echo_missing.values()))

    # samples ------------------------------------------------------------------------------

    def probed_topics(self, asked: Iterable[str], heard: Mapping[str, float]) -> None:
        """A fresh participant was asked about silent topics and received samples of those
        (topic -> seconds silent)."""
        self.probes += 1
        self.silent_rechecking -= set(asked)
        self.silent.update(heard)

    def sample_received(self, topics: Iterable[str]) -> None:
        """These topics receive samples again (or are no longer pooled)."""
        for topic in topics:
            self.silent.pop(topic, None)
            self.silent_rechecking.discard(topic)

    # callbacks ----------------------------------------------------------------------------

    def echo(self, executor: str, came_back: bool) -> None:
        """One echo period of an executor: whether its last echo came back."""
        self.echo_missing[executor] = 0 if came_back else self.echo_missing.get(executor, 0) + 1

    # the state ----------------------------------------------------------------------------

    def signs(self) -> list[str]:
        """The confirmed signs of deafness now (empty: hearing)."""
        out = []
        if self.confirmed:
            out.append(f"{len(self.confirmed)} DDS participant(s) on this host (pid "
                       f"{', '.join(map(str, sorted(self.confirmed)))}) run but the gateway's "
                       "participant does not discover them")
        if self.rechecking:
            out.append(f"re-joined DDS; checking whether the new participant discovers pid "
                       f"{', '.join(map(str, sorted(self.rechecking)))}")
        if self.silent_rechecking:
            out.append(f"re-joined DDS; waiting for samples of "
                       f"{', '.join(sorted(self.silent_rechecking))}")
        if self.silent:
            topics = ", ".join(sorted(self.silent))
            out.append(f"samples of {topics} reach a fresh participant but not the gateway's "
                       f"(silent {max(self.silent.values()):.0f} s)")
        stuck = sorted(name for name, n in self.echo_missing.items() if n >= ECHO_MISSES)
        if stuck:
            out.append(f"the ROS executor(s) {', '.join(stuck)} did not run a callback for "
                       f"{ECHO_MISSES * ECHO_EVERY_S:.0f} s")
        return out

    def update(self, now: float, wall: float) -> str | None:
        """Recompute the state from the signs; "deaf" when it just went deaf, "recovered"
        when it just came back, else None."""
        signs = self.signs()
        if signs:
            became = self.reason is None
            self.reason = "; ".join(signs)
            if became:
                self.since = wall
                self.last_deaf = wall
                self.deaf_events += 1
                return "deaf"
            return None
        if self.reason is None:
            return None
        self.reason = None
        self.last_recovered = wall
        self.last_recovery_s = None if self.since is None else round(wall - self.since, 3)
        self.since = None
        self.recoveries += 1
        return "recovered"

    def watching(self) -> bool:
        """Whether checks soon may change the state (candidates pending or deaf)."""
        return self.deaf or any(pid not in self.excused for pid in self.unheard_since)

    def health(self) -> dict[str, Any]:
        """For /health (x-vendor-readiness.hearing)."""
        return {"state": "deaf" if self.deaf else "hearing", "reason": self.reason,
                "deaf_since": _utc(self.since), "deaf_events": self.deaf_events,
                "recoveries": self.recoveries, "last_deaf": _utc(self.last_deaf),
                "last_recovered": _utc(self.last_recovered),
                "last_deaf_s": self.last_recovery_s, "probes": self.probes,
                "candidates": sorted(self.unheard_since),
                "echo_every_s": ECHO_EVERY_S}
