"""Garbage collector policy: the startup heap frozen out of full collections, pauses measured.

A full (generation 2) collection walks every tracked container of the process with the GIL
held: with the startup heap (modules, classes, route tables, ROS types: about 60k objects)
and 1000 stream clients it stops the event loop for 40-200 ms, and fault storms trigger one
by promoting their in-flight reports. `settle()` runs once start is done: `gc.freeze()` moves
every object alive then into the permanent generation (no copy, no memory; cyclic garbage
left by the start stays, a few hundred objects), so full collections walk only what was made
since; the young threshold is raised so that fewer transient objects of a burst
live long enough to be promoted. Every collection's pause is measured for /health.

What a gateway builds after its start grows with its fleet: a primary over 1,000 robots holds
their peers, connections and parsed answers, and its full collections paused the loop for
about 300 ms. A full collection slower than REFREEZE_MS therefore freezes what survived it
(nothing of it is garbage: the collection just ran), on the event loop right after. Objects
frozen that later die in a reference cycle are not collected while frozen, so once THAW_S
passed since the last thaw, the next such refreeze gives the whole frozen heap back to the
collector instead (its next full collection walks it all once and frees those cycles, then
freezes what survived).
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

REFREEZE_MS = 50.0  # a full collection pausing longer than this freezes what survived it
THAW_S = 3600.0  # frozen heap given back to full collections once this long after the last


class GcPolicy:
    """Applies the policy and times every collection (the x-vendor-gc block of /health)."""

    def __init__(self) -> None:
        self.frozen = 0
        self.collections = [0, 0, 0]
        self.max_ms = [0.0, 0.0, 0.0]
        self.refreezes = 0  # slow full collections whose survivors were frozen
        self.thaws = 0
        self._start = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None  # refreezes run on it
        self._refreeze_due = False
        self._thawed_at = 0.0

    def settle(self, freeze: bool, young_threshold: int,
               loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Freeze the heap alive now; set the young threshold (0: keep); time collections.
        With a loop (and freeze), a slow full collection freezes what survived it there."""
        if young_threshold > 0:
            _, t1, t2 = gc.get_threshold()
            gc.set_threshold(young_threshold, t1, t2)
        if freeze:
            gc.freeze()
            self._loop = loop
            self._thawed_at = time.monotonic()
        self.frozen = gc.get_freeze_count()
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def close(self) -> None:
        """Stop timing collections (and refreezing)."""
        self._loop = None
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
            return
        gen = info["generation"]
        ms = (time.perf_counter() - self._start) * 1e3
        self.collections[gen] += 1
        if ms > self.max_ms[gen]:
            self.max_ms[gen] = ms
        loop = self._loop
        if gen == 2 and ms > REFREEZE_MS and loop is not None and not self._refreeze_due:
            self._refreeze_due = True  # the collection may run on any thread: freeze on the loop
            try:
                loop.call_soon_threadsafe(self._refreeze)
            except RuntimeError:  # the loop is closed
                self._refreeze_due = False

    def _refreeze(self) -> None:
        """Freeze what the last full collection left, or thaw once THAW_S has passed."""
        self._refreeze_due = False
        if self._loop is None:
            return
        now = time.monotonic()
        if now - self._thawed_at >= THAW_S:
            gc.unfreeze()
            self._thawed_at = now
            self.thaws += 1
        else:
            gc.freeze()
            self.refreezes += 1
        self.frozen = gc.get_freeze_count()

    def health(self) -> dict[str, Any]:
        """Objects frozen, collections and their longest pause (ms) per generation, and how
        often slow full collections refroze the heap (and the heap was thawed)."""
        return {"frozen_objects": self.frozen, "threshold": list(gc.get_threshold()),
                "collections": list(self.collections),
                "max_pause_ms": [round(ms, 2) for ms in self.max_ms],
                "refreezes": self.refreezes, "thaws": self.thaws}
