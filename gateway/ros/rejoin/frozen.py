"""When to re-join DDS for a participant that resumed and was not rediscovered (pure).

Fast DDS 3.2 sometimes never rediscovers a participant that was frozen past its lease and
resumed (docs/ros.md), while a participant created afterwards sees it at once. The gateway
then re-joins DDS with a new participant (ros/dds/bridge.py, RosBridge.rejoin). This module
decides when: only while participants bound on this host are not discovered (unseen.py) does
the gateway look up the processes holding the participant ports (ros/rejoin/portcensus.py) and their
state. A process whose participant is not discovered is a candidate once it runs again after
it was seen stopped (SIGSTOP, a debugger) or after its participant was discovered before, and
its participant stays undiscovered for GRACE_S: a resumed participant that DDS does rediscover
is back within about 0.3 s. Re-joining while the owner is still stopped is useless (it cannot
answer), so stopped owners only mark themselves.

A participant DDS did rediscover can still come back incomplete: its writers rediscovered and
not its readers (a service it serves stays unlisted). A returned participant whose announced
endpoints are not all on the graph after INCOMPLETE_GRACE_S is a reason to re-join as well
(`observe_incomplete`, by GUID prefix; the endpoints: ros/graph/orphans.py missing_endpoints).

Participants are told apart by process: a Fast DDS GUID prefix holds the low 16 bits of its
process id (bytes 4-5, little endian, after the vendor id 01 0f and the host id).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ..graph.discovery_layout import prefix_pid_key

GRACE_S = 1.0  # running again and still undiscovered this long: DDS will not bring it back
INCOMPLETE_GRACE_S = 2.0  # a returned participant's endpoints normally all come within 0.3 s
FAST_CHECK_S = 0.5  # check cadence while an undiscovered participant may need a rejoin
STOPPED = ("T", "t")  # /proc/<pid>/stat: stopped by a signal, stopped by a tracer
GONE = ("Z", "X")
MAX_KNOWN = 4096


def pid_key(pid: int) -> int:
    """The part of a process id a Fast DDS GUID prefix holds."""
    return pid & 0xFFFF


class FrozenWatch:
    """Tracks the processes whose participant is not discovered; says when to re-join."""

    def __init__(self, enabled: bool = True, min_interval_s: float = 5.0,
                 grace_s: float = GRACE_S, own_pid: int | None = None) -> None:
        self.enabled = enabled
        self.min_interval_s = min_interval_s
        self.grace_s = grace_s
        self.own_pid = own_pid
        self.known: set[int] = set()  # pid keys of participants discovered at some check
        self.stopped: set[int] = set()  # undiscovered pids seen stopped
        self.running_since: dict[int, float] = {}  # undiscovered pid -> first seen running
        self.tried: set[int] = set()  # pids a rejoin was made for (not again until seen)
        self.unseen: set[int] = set()  # pids not discovered at the last check
        self.incomplete_since: dict[bytes, float] = {}  # GUID prefix -> first seen incomplete
        self.tried_incomplete: set[bytes] = set()  # prefixes a rejoin was made for
        self.rejoins = 0
        self.failures = 0
        self.last_rejoin: float | None = None  # monotonic
        self.last_rejoin_wall: float | None = None
        self.last_rejoin_s: float | None = None  # how long the last one took

    def discovered(self, prefixes: Iterable[bytes]) -> set[int]:
        """Note the participants discovered now; their pid keys."""
        keys = {k for k in map(prefix_pid_key, prefixes) if k is not None}
        if len(self.known) + len(keys) > MAX_KNOWN:
            self.known.clear()
        self.known |= keys
        return keys

    def observe(self, owners: dict[int, str], prefixes: Iterable[bytes],
                now: float) -> list[int]:
        """Account one check (owners: pid -> state letter of the processes holding participant
        ports; prefixes: GUID prefixes of the participants discovered); the pids to re-join
        for now (empty: none)."""
        seen = self.discovered(prefixes)
        unseen = {pid for pid, state in owners.items() if pid != self.own_pid
                  and pid_key(pid) not in seen and state not in GONE}
        for gone in set(self.running_since) | self.stopped | self.tried:
            if gone not in unseen:
                self.running_since.pop(gone, None)
                self.stopped.discard(gone)
                self.tried.discard(gone)
        self.unseen = unseen
        due = []
        for pid in sorted(unseen):
            if owners[pid] in STOPPED:
                self.stopped.add(pid)
                self.running_since.pop(pid, None)
                self.tried.discard(pid)  # stopped again: a new freeze
                continue
            since = self.running_since.setdefault(pid, now)
            if pid in self.tried or (pid not in self.stopped and pid_key(pid) not in self.known):
                continue  # never a ROS participant we knew, or a rejoin did not help
            if now - since >= self.grace_s:
                due.append(pid)
        return due if due and self._may_rejoin(now) else []

    def observe_incomplete(self, missing: Iterable[bytes], now: float) -> list[bytes]:
        """Account the returned participants (GUID prefixes) with endpoints not on the graph at
        one check; the prefixes to re-join for now (empty: none)."""
        missing = set(missing)
        for prefix in list(self.incomplete_since):
            if prefix not in missing:
                del self.incomplete_since[prefix]
        self.tried_incomplete &= missing
        due = [p for p in sorted(missing) if p not in self.tried_incomplete
               and now - self.incomplete_since.setdefault(p, now) >= INCOMPLETE_GRACE_S]
        return due if due and self._may_rejoin(now) else []

    def _may_rejoin(self, now: float) -> bool:
        return self.enabled and (self.last_rejoin is None
                                 or now - self.last_rejoin >= self.min_interval_s)

    def rejoined(self, pids: Iterable[int], now: float, wall: float, took_s: float | None,
                 ok: bool = True, prefixes: Iterable[bytes] = ()) -> None:
        """Account a rejoin made (or failed) for these pids (or returned participants)."""
        self.tried |= set(pids)
        self.tried_incomplete |= set(prefixes)
        self.last_rejoin, self.last_rejoin_wall = now, wall
        if ok:
            self.rejoins += 1
            self.last_rejoin_s = took_s
        else:
            self.failures += 1

    def watching(self) -> bool:
        """Whether a check soon may lead to a rejoin (else the slow cadence will do)."""
        return any(pid not in self.tried and (pid in self.stopped or pid_key(pid) in self.known)
                   for pid in self.unseen) or any(
            p not in self.tried_incomplete for p in self.incomplete_since)

    def health(self) -> dict[str, Any]:
        """For /health: rejoins made, the last one (UTC, ISO 8601) and what it took."""
        last = None
        if self.last_rejoin_wall is not None:
            last = datetime.fromtimestamp(self.last_rejoin_wall, UTC).isoformat(
                timespec="seconds").replace("+00:00", "Z")
        return {"rejoins": self.rejoins, "rejoin_failures": self.failures,
                "last_rejoin": last, "last_rejoin_s": self.last_rejoin_s,
                "rejoin_enabled": self.enabled}
