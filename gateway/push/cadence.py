"""The cyclic tick schedule: one frame per interval, late ticks caught up, long stalls skipped.

Pure: every function takes the clock reading `now`. A tick that runs late (a starved event
loop wakes timers late) still sends its frame, carrying the newest value; the next tick is
the next interval's, due at once when that is already past, so a loop that falls behind for
a moment catches up one tick per loop turn (each reads the value newest then: nothing is
queued). Only a backlog longer than CATCHUP_MAX_S is given up, and those intervals are
counted as due and not delivered.
"""

from __future__ import annotations

from dataclasses import dataclass

# The longest backlog of intervals a late timer makes up; past it (a stall) the missed ones
# are skipped, keeping the phase.
CATCHUP_MAX_S = 1.0


def next_due(due: float, period: float, now: float,
             catchup_max_s: float = CATCHUP_MAX_S) -> tuple[float, int]:
    """After the tick due at `due` ran at `now`: the next tick's due time, and how many
    intervals were skipped (due, never to be sent) because the backlog exceeded the limit."""
    nxt = due + period
    behind = now - nxt
    if behind <= catchup_max_s:
        return nxt, 0
    # Keep the newest catchup_max_s of the backlog; the intervals before it are given up.
    skipped = int((behind - catchup_max_s) // period) + 1
    return nxt + skipped * period, skipped


@dataclass
class DeliveryCount:
    """Intervals due and frames delivered (over subscriptions that had a value to send)."""

    due: int = 0
    delivered: int = 0

    def tick(self, frames: int, skipped: int) -> None:
        """One tick sent `frames` frames, one per subscription; each of them also owed
        `skipped` intervals given up before it."""
        self.due += frames * (1 + skipped)
        self.delivered += frames

    @property
    def share(self) -> float:
        """Frames delivered / intervals due (1.0 before anything was due)."""
        return round(self.delivered / self.due, 4) if self.due else 1.0

    def health(self) -> dict[str, float | int]:
        """The figures /health shows."""
        return {"intervals_due": self.due, "frames_delivered": self.delivered,
                "delivered_share": self.share}
