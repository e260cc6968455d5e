"""A peer's liveness from its own health probes: status, retries and backoff (pure, explicit now).

mDNS reports a crashed peer only after ~19 minutes, so liveness comes from these probes:
online, a probe every interval; a failed probe is retried after RETRY_S and the peer goes
offline after OFFLINE_AFTER consecutive failures, at once for a probe unanswered within
PROBE_BUDGET_S (a hung or stopped peer: offline within interval + PROBE_BUDGET_S), a refused
connection, an error status, or an answer that is not a gateway's health document. Offline,
a probe that timed out is followed by the next at once (it already waited its budget, and a
probe always in flight sees a resumed peer as soon as it answers); other failures back off
along BACKOFF_S (at most 2 s, also for a peer never reached yet). One success brings the peer
back.

A probe's budget is PROBE_BUDGET_S or what the link needs, at most PROBE_BUDGET_MAX_S: the
answered probes' round trips are smoothed as TCP does (RFC 6298: srtt + 4 rttvar, and at least
twice srtt), and a peer
never reached yet (nothing known of its link: a robot far away, or starting on a busy
machine) gets twice the budget after each probe of it that timed out.
"""

from __future__ import annotations

from dataclasses import dataclass

# Reasons of the spec's peer_failures entries.
TIMEOUT = "timeout"
UNREACHABLE = "unreachable"
CANCELED = "canceled"
ERROR_STATUS = "error-status"
TOO_LARGE = "too-large"
INVALID_RESPONSE = "invalid-response"
REASONS = (TIMEOUT, UNREACHABLE, CANCELED, ERROR_STATUS, TOO_LARGE, INVALID_RESPONSE)

RETRY_S = 0.2
OFFLINE_AFTER = 2
BACKOFF_S = (0.25, 0.5, 1.0, 2.0)
# A health probe's budget (at most; aggregation.timeout_ms may be lower). A gateway answers
# /health in milliseconds; one that has not within this is hung or stopped.
PROBE_BUDGET_S = 0.8
# A budget grown for a slow link or a slow peer stays below this (a healed partition is
# still seen by the probe in flight, or by the next one soon after).
PROBE_BUDGET_MAX_S = 4.0
RTT_GAIN, RTTVAR_GAIN, RTTVAR_FACTOR = 1 / 8, 1 / 4, 4.0  # RFC 6298
# Failures that prove the peer down at once (no second probe needed).
HARD = frozenset({UNREACHABLE, ERROR_STATUS, INVALID_RESPONSE, TIMEOUT})


def is_health_document(body: object) -> bool:
    """True for a gateway's /health body: a status word, a timestamp and the warning schema."""
    return (isinstance(body, dict) and isinstance(body.get("status"), str)
            and isinstance(body.get("timestamp"), int)
            and isinstance(body.get("warning_schema_version"), int))


@dataclass
class PeerHealth:
    """Online/offline state of one peer, changed only by record()."""

    online: bool = False
    probed: bool = False
    failures: int = 0
    since: float = 0.0
    last_ok: float | None = None
    last_reason: str | None = None
    srtt: float | None = None  # smoothed round trip of answered probes (s)
    rttvar: float = 0.0
    timeouts: int = 0  # probes timed out since the last answered one

    @property
    def status(self) -> str:
        """online or offline (a peer not probed yet is offline)."""
        return "online" if self.online else "offline"

    def record(self, ok: bool, now: float, reason: str | None = None) -> bool:
        """Account one probe; True when the status changed."""
        self.probed = True
        if ok:
            self.timeouts = 0
            self.failures = 0
            self.last_ok = now
            self.last_reason = None
            if not self.online:
                self.online, self.since = True, now
                return True
            return False
        self.failures += 1
        self.last_reason = reason
        if reason == TIMEOUT:
            self.timeouts += 1
        if self.online and (self.failures >= OFFLINE_AFTER or reason in HARD):
            self.online, self.since = False, now
            return True
        return False

    def delay(self, interval_s: float) -> float:
        """Seconds until the next probe."""
        if self.online:
            return interval_s if self.failures == 0 else min(RETRY_S, interval_s)
        if self.failures == 0:
            return min(BACKOFF_S[0], interval_s)
        if self.last_reason == TIMEOUT:
            return 0.0  # the probe took its whole budget: keep one in flight
        return BACKOFF_S[min(self.failures, len(BACKOFF_S)) - 1]

    def measure(self, took: float) -> None:
        """Account one answered round trip (s) in the smoothed estimate."""
        if self.srtt is None:
            self.srtt, self.rttvar = took, took / 2
            return
        self.rttvar += RTTVAR_GAIN * (abs(self.srtt - took) - self.rttvar)
        self.srtt += RTT_GAIN * (took - self.srtt)

    def budget(self, floor_s: float) -> float:
        """The next probe's budget: floor_s, or what the link needs, at most
        PROBE_BUDGET_MAX_S."""
        need = floor_s
        if self.srtt is not None:  # at least twice the smoothed round trip (low variance)
            need = max(need, self.srtt + max(RTTVAR_FACTOR * self.rttvar, self.srtt))
        if self.last_ok is None:  # never reached: its link is unknown
            need *= 2 ** min(self.timeouts, 8)
        return max(floor_s, min(PROBE_BUDGET_MAX_S, need))


# Share of the event loop the fleet merges of a burst of peer changes may take: the next merge
# waits (1 / MERGE_DUTY - 1) times the last one's cost (bench/fleet_sim.py: at 1000 peers a
# merge took ~20 ms, and every peer's first refresh started one).
MERGE_DUTY = 0.2


def merge_delay(now: float, last_end: float, last_cost: float) -> float:
    """Seconds to wait before the next merge of the peer table's changes (0: merge now)."""
    return max(0.0, last_end + last_cost * (1 / MERGE_DUTY - 1) - now)
