"""Garbage collector policy: the startup heap frozen out of full collections, pauses measured.

A full (generation 2) collection walks every tracked container of the process with the GIL
held: with the startup heap (modules, classes, route tables, ROS types: about 60k objects)
and 1000 stream clients it stops the event loop for 40-200 ms, and fault storms trigger one
by promoting their in-flight reports. `settle()` runs once start is done: `gc.freeze()` moves
every object alive then into the permanent generation (no copy, no memory; cyclic garbage
left by the start stays, a few hundred objects), so full collections walk only what was made
since; the young threshold is raised so that fewer transient objects of a burst
live long enough to be promoted. Every collection's pause is measured for /health.
"""

from __future__ import annotations

import gc
import time
from typing import Any


class GcPolicy:
    """Applies the policy and times every collection (the x-vendor-gc block of /health)."""

    def __init__(self) -> None:
        self.frozen = 0
        self.collections = [0, 0, 0]
        self.max_ms = [0.0, 0.0, 0.0]
        self._start = 0.0

    def settle(self, freeze: bool, young_threshold: int) -> None:
        """Freeze the heap alive now; set the young threshold (0: keep); time collections."""
        if young_threshold > 0:
            _, t1, t2 = gc.get_threshold()
            gc.set_threshold(young_threshold, t1, t2)
        if freeze:
            gc.freeze()
        self.frozen = gc.get_freeze_count()
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def close(self) -> None:
        """Stop timing collections."""
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

    def health(self) -> dict[str, Any]:
        """Objects frozen at start, collections and their longest pause (ms) per generation."""
        return {"frozen_objects": self.frozen, "threshold": list(gc.get_threshold()),
                "collections": list(self.collections),
                "max_pause_ms": [round(ms, 2) for ms in self.max_ms]}
