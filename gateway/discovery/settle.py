"""When changed files may be loaded: their stamps held still for a settle window (pure).

A manifest or CSV written in place passes through half-written states, and a half can be
valid on its own (a list of apps cut between two entries). Its size or mtime moves with every
write, so a stamp unchanged for the settle window means the writer paused at least that long;
a load follows only then (and only a file that parses replaces the old set: pipeline.py).
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

    @property
    def pending(self) -> bool:
        """A change is waiting to settle."""
        return self.seen != self.loaded

    def due(self, stamp: Any, now: float) -> bool:
        """Account one look at the files; True when stamp differs from what is loaded and
        held still for settle_s (it is then taken as loaded)."""
        if stamp != self.seen:
            self.seen, self.since = stamp, now
        if stamp == self.loaded or now - self.since < self.settle_s:
            return False
        self.loaded = stamp
        return True
