"""A peer's liveness from its own health probes: status, retries and backoff (pure, explicit now).

mDNS reports a crashed peer only after ~19 minutes, so liveness comes from these probes:
online, a probe every interval; a failed probe is retried after RETRY_S and the peer goes
offline after OFFLINE_AFTER consecutive failures, at once for a probe unanswered within
PROBE_BUDGET_S (a hung or stopped peer: offline within interval + PROBE_BUDGET_S), a refused
connection, an error status, or an answer that is not a gateway's health document. Offline,
a probe that timed out is followed by the next at once (it already waited its budget, and a
probe always in flight sees a resumed peer as soon as it answers); other failures back off
along BACKOFF_S. One success brings the peer back.
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

    @property
    def status(self) -> str:
        """online or offline (a peer not probed yet is offline)."""
        return "online" if self.online else "offline"

    def record(self, ok: bool, now: float, reason: str | None = None) -> bool:
        """Account one probe; True when the status changed."""
        self.probed = True
        if ok:
            self.failures = 0
            self.last_ok = now
            self.last_reason = None
            if not self.online:
                self.online, self.since = True, now
                return True
            return False
        self.failures += 1
        self.last_reason = reason
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
