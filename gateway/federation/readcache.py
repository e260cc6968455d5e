"""Cached peer answers for merged reads, dropped when a peer signals a change (pure).

With aggregation.cache.enabled a primary keeps each peer's answer to a collection read and
serves it again while it is younger than aggregation.cache.max_age_ms and the peer has not
signalled a change since: a relayed fault event from that peer, or any change of the peer
table (health, entity ETag). A miss falls back to the live fan-out. Times are explicit.

The final merged response body is kept too (`body_get`/`body_put`), as bytes split around its
`age_ms` value, so a repeated merged read costs a lookup and a join: it holds while no change
signal came (one epoch for all peers), the local part's stamp is the same and its oldest peer
answer is within the age bound.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

# Collections whose answers are cached: their changes come with the signals above (entity
# sets and graph: ETag and health; faults: the relay), or within the age bound. Logs and
# configurations (parameter values) change without a signal and are always read live.
CACHEABLE = frozenset({"data", "operations", "faults", "version-info"})
MAX_ENTRIES = 4096
MAX_BODIES = 1024
# Bytes of merged bodies kept in all: a merged read over 1,000 robots is up to a few MiB, and
# each caller (its X-Client-Id and credential key the body) gets its own; the oldest kept go
# first.
MAX_BODY_BYTES = 64 * 2**20


@dataclass
class _Body:
    head: bytes  # the body up to the age_ms value
    tail: bytes  # the rest
    stamp: object  # the local part's generation
    epoch: int  # ReadCache.epoch when its peer answers were taken
    oldest: float  # fetch time of its oldest peer answer


@dataclass
class _Entry:
    answer: Any
    fetched: float
    version: tuple[int, int]


class ReadCache:
    """Peer answers by (peer, path, caller-dependent headers), each tied to the peer's version."""

    def __init__(self, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._entries: dict[Hashable, _Entry] = {}
        self._peer_versions: dict[str, int] = {}
        self._all = 0  # bumped by changes that may touch every peer's answers
        self.epoch = 0  # bumped by every change signal (merged bodies hold within one)
        self._bodies: dict[Hashable, _Body] = {}  # oldest kept first
        self._body_bytes = 0
        self.body_hits = 0
        self.hits = 0
        self.misses = 0
        self.invalidations = 0

    def version(self, peer: str) -> tuple[int, int]:
        """The peer's current version (take it before a fetch, give it to put)."""
        return self._all, self._peer_versions.get(peer, 0)

    def get(self, peer: str, key: Hashable, now: float) -> tuple[Any, float, float] | None:
        """(answer, age in s, fetch time) when still valid, else None."""
        entry = self._entries.get(key)
        if entry is None or entry.version != self.version(peer) \
                or now - entry.fetched > self.max_age_s:
            self.misses += 1
            return None
        self.hits += 1
        return entry.answer, now - entry.fetched, entry.fetched

    def put(self, key: Hashable, answer: Any, fetched: float, version: tuple[int, int]) -> None:
        """Keep an answer fetched at `fetched` under the peer version taken before the fetch."""
        if len(self._entries) >= MAX_ENTRIES and key not in self._entries:
            self._entries.clear()
        self._entries[key] = _Entry(answer, fetched, version)

    def peer_changed(self, peer: str) -> None:
        """A peer signalled a change (e.g. a fault event): its answers are stale."""
        self._peer_versions[peer] = self._peer_versions.get(peer, 0) + 1
        self.epoch += 1
        self.invalidations += 1

    def all_changed(self) -> None:
        """The peer table changed (health, entities): every answer is stale."""
        self._all += 1
        self.epoch += 1
        self.invalidations += 1

    def body_get(self, key: Hashable, stamp: object, now: float) -> bytes | None:
        """The merged body kept under key, its age_ms filled in for now; None when stale."""
        entry = self._bodies.get(key)
        if entry is None or entry.epoch != self.epoch or entry.stamp != stamp \
                or now - entry.oldest > self.max_age_s:
            return None
        self.hits += 1
        self.body_hits += 1
        return b"%b%d%b" % (entry.head, round((now - entry.oldest) * 1000), entry.tail)

    def body_put(self, key: Hashable, stamp: object, epoch: int, oldest: float,
                 head: bytes, tail: bytes) -> None:
        """Keep a merged body built from answers taken in epoch, the oldest fetched at oldest."""
        bodies = self._bodies
        replaced = bodies.pop(key, None)
        if replaced is not None:
            self._body_bytes -= len(replaced.head) + len(replaced.tail)
        size = len(head) + len(tail)
        if size > MAX_BODY_BYTES:
            return  # served, not kept
        while bodies and (len(bodies) >= MAX_BODIES
                          or self._body_bytes + size > MAX_BODY_BYTES):
            first = bodies.pop(next(iter(bodies)))
            self._body_bytes -= len(first.head) + len(first.tail)
        bodies[key] = _Body(head, tail, stamp, epoch, oldest)
        self._body_bytes += size

    def stats(self) -> dict[str, Any]:
        """Figures for /health."""
        return {"max_age_ms": round(self.max_age_s * 1000), "entries": len(self._entries),
                "bodies": len(self._bodies), "body_bytes": self._body_bytes,
                "hits": self.hits, "body_hits": self.body_hits, "misses": self.misses,
                "invalidations": self.invalidations}
