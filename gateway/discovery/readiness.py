"""Readiness: discovery is done once every DDS participant found has its nodes known (pure).

What the graph tells (ros/graph/census.py): the DDS participants discovered (one
`ros_discovery_info` writer each) and whether each of them has its nodes known (a named `/rosout` publisher; no
unnamed one). Participants not discovered at all cannot be known: the gateway's participant
announces itself at start (Fast DDS: 5 announcements 100 ms apart) and every local participant
answers, and one that missed those (or answers late on a loaded machine) is heard at its next
periodic announcement: every second with the short-lease profile the demo uses and deploy/
ships (Fast DDS's own default is 3 s, where such a late participant can still come after
ready). So the gateway is ready once the census is complete, ANNOUNCE_S (one such period)
passed since its participant was created, and the graph and census stayed unchanged for QUIET_S, or for as long
as the first other participant took to answer if that was longer (a loaded machine answers
slowly, and its answers trickle in as slowly). A census holding no participant but the
gateway's own is not complete: an empty domain is ready by the settle rule. A census that
never completes (a participant without nodes, a node without /rosout) falls back to the graph
staying unchanged for SETTLE_S; CAP_S after the start it is ready in any case. The windows are
measured on a clock that stops while the gateway waits for a CPU (runclock.py), the cap on the
wall clock: a saturated machine delays readiness, up to the cap, instead of ending it early.

The participants bound on this host (ros/rejoin/portcensus.py, the gateway's own included) are a
lower bound: the census is not complete while fewer participants are discovered, however quiet the
graph (DDS tells of a local participant up to about 2 s after the gateway's start, in bursts;
without this bound the gateway was ready with some of a 14-process robot missing). When only
this host's participants can be discovered at all (`closed`: ROS_AUTOMATIC_DISCOVERY_RANGE=
LOCALHOST, no static peers), a complete census that holds all of them is the whole graph: it is
ready after WHOLE_QUIET_S (the endpoints of a participant come in one burst with its node
names), without waiting for ANNOUNCE_S or a slow first answer.
"""

from __future__ import annotations

ANNOUNCE_S = 1.0
QUIET_S = 0.3
WHOLE_QUIET_S = 0.15
SETTLE_S = 1.5
CAP_S = 15.0


class Readiness:
    """Starting until discovery is known complete (or settled); observe() every poll."""

    def __init__(self, start: float, settle_s: float = SETTLE_S, cap_s: float = CAP_S,
                 announce_s: float = ANNOUNCE_S, quiet_s: float = QUIET_S,
                 closed: bool = False, whole_quiet_s: float = WHOLE_QUIET_S) -> None:
        self.start = start
        self.closed = closed  # only this host's participants can be discovered
        self.settle_s = settle_s
        self.cap_s = cap_s
        self.announce_s = announce_s
        self.quiet_s = quiet_s
        self.whole_quiet_s = whole_quiet_s
        self.last_change = start
        self.first_answer_s: float | None = None  # when another participant was first seen
        self.ready_at: float | None = None
        self.reason = ""  # "complete", "settled" or "cap" once ready

    @property
    def ready(self) -> bool:
        """True once discovery is done."""
        return self.ready_at is not None

    def observe(self, changed: bool, now: float, complete: bool = False,
                wall: float | None = None, others: int | None = None,
                local: int | None = None) -> bool:
        """Account one poll (changed: graph or census differ from the previous poll;
        complete: every participant discovered has its nodes known); ready?

        now: the run clock (the windows); wall: the wall clock (the cap; default now). Both
        count from the same start. others: participants discovered besides the gateway's own
        (None: not counted, the census alone decides). local: participants bound on this host,
        the gateway's own included (None: unknown).
        """
        if self.ready_at is not None:
            return True
        wall = now if wall is None else wall
        if changed:
            self.last_change = now
        quiet = now - self.last_change
        quiet_needed = self.quiet_s
        whole = False  # every participant that can exist is discovered
        if others is not None:
            if others > 0 and self.first_answer_s is None:
                self.first_answer_s = now - self.start
            if local is not None and others + 1 < local:
                complete = False  # a participant on this host not discovered yet
            whole = self.closed and local is not None and complete
            if whole:
                quiet_needed = self.whole_quiet_s
            elif self.first_answer_s is None:
                complete = False
            else:
                quiet_needed = max(quiet_needed, self.first_answer_s)
        announced = whole or now - self.start >= self.announce_s
        if complete and announced and quiet >= quiet_needed:
            self.reason = "complete"
        elif quiet >= self.settle_s:
            self.reason = "settled"
        elif wall - self.start >= self.cap_s:
            self.reason = "cap"
        else:
            return False
        self.ready_at = wall
        return True
