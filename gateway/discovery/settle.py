"""When changed files may be loaded: their stamps held still for a settle window (pure).

A manifest or CSV written in place passes through half-written states, and a half can be
valid on its own (a list of apps cut between two entries). Its size or mtime moves with every
write, so a stamp unchanged for the settle window means the writer paused at least that long;
a load follows only then (and only a file that parses replaces the old set: pipeline.py).

A writer can pause longer than the window, so a load that would drop entities is held back
(`hold_back`): that stamp is due again only once it held still for a longer window in all.
When the files move meanwhile (the writer resumed), the held-back load is forgotten.
"""

from __future__ import annotations

from typing import Any


class Settle:
    """Tracks file stamps; due() says when a new stamp has held for settle_s."""

    def __init__(self, loaded: Any, settle_s: float) -> None:
        self.loaded = loaded  # the stamp of what is loaded
        self.settle_s = settle_s
        self.seen = loaded  # the stamp seen last
        self.since = 0.0  # when `seen` was first seen
        self._previous = loaded  # what was loaded before the last due()
        self._longer: tuple[Any, float] | None = None  # (stamp, window) of a held-back load

    @property
    def pending(self) -> bool:
        """A change is waiting to settle."""
        return self.seen != self.loaded

    def due(self, stamp: Any, now: float) -> bool:
        """Account one look at the files; True when stamp differs from what is loaded and
        held still for settle_s (or a held-back stamp for its longer window; it is then taken
        as loaded)."""
        if stamp != self.seen:
            self.seen, self.since = stamp, now
        window = self.settle_s
        if self._longer is not None:
            if self._longer[0] == stamp:
                window = self._longer[1]
            else:  # the files moved again: the held-back state is gone
                self._longer = None
        if stamp == self.loaded or now - self.since < window:
            return False
        self._previous, self.loaded = self.loaded, stamp
        return True

    def held(self, now: float) -> float:
        """Seconds the stamp seen last has held still."""
        return now - self.since

    def hold_back(self, window_s: float) -> None:
        """The stamp just due is not taken as loaded: it is due again once it held still for
        window_s in all (from when it was first seen)."""
        self._longer = (self.loaded, window_s)
        self.loaded = self._previous
