"""The one owner of data-read body caching: what is cached, while when it holds, and its replay.

A data read answers the newest sample of a topic as JSON. `DataReads` keeps, for the sample
pool it serves:

- the JSON of each pooled topic's newest sample (converted once per sample; push's cyclic
  data frames read it too), and
- the whole response body of each reader's view (entity kind, entity id, topic), built from
  that JSON at one entity-set generation.

Policy, in one place (`_fresh`): a cached body holds while the pool holds the same entry
(`_Entry.held`: not evicted, not re-subscribed for another type), that entry's newest sample is
the very Sample object it was built from, and the entity set's generation is the one it was
built at; a sample's JSON holds for that Sample object. Replay: `offer` hands the fast path
(gateway/http/hot.py) a probe of that same policy over the same stored body, counted as the
generic read counts (an entity-cache hit for the entity's topics, a pool hit that refreshes the
topic's LRU place).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from aiohttp import web

from ..http import hot

if TYPE_CHECKING:
    from ..discovery.cache import EntityCache
    from ..http.state import GatewayState
    from ..ros.topics.pool import Sample, SamplePool, _Entry

# Bodies (one per reader's view of a topic) and sample JSONs kept; past it, a store restarts.
MAX_BODIES = 4096
View = tuple[str, str, str]  # entity kind, entity id, topic


class _Body:
    """One view's cached answer: the body and what it was built from."""

    __slots__ = ("body", "entry", "generation", "sample")

    def __init__(self, entry: _Entry, sample: Sample, generation: int, body: bytes) -> None:
        self.entry, self.sample, self.generation, self.body = entry, sample, generation, body


class DataReads:
    """Data-read bodies of one sample pool: the JSON of each topic's newest sample and the
    answer of each view, while `_fresh` holds; and the probe that replays an answer."""

    def __init__(self, pool: SamplePool) -> None:
        self.pool = pool
        self._json: dict[str, tuple[Sample, bytes]] = {}  # topic -> a sample's JSON
        self._bodies: dict[View, _Body] = {}

    @staticmethod
    def _fresh(entry: _Entry, held: _Entry, sample: Sample) -> bool:
        """The policy: built from `held`'s `sample`, and `entry` (what the pool holds now) is
        that entry, still pooled, and `sample` is still its newest."""
        return entry is held and entry.held and entry.sample is sample

    def json(self, entry: _Entry, sample: Sample) -> bytes | None:
        """The JSON of this sample of the entry's topic when converted already, else None."""
        got = self._json.get(entry.topic)
        return got[1] if got is not None and got[0] is sample else None

    def put_json(self, entry: _Entry, sample: Sample, js: bytes) -> bytes:
        """Keep the JSON of this sample of the entry's topic; returns it."""
        if len(self._json) >= MAX_BODIES and entry.topic not in self._json:
            self._json.clear()
        self._json[entry.topic] = (sample, js)
        return js

    def sample_json(self, entry: _Entry, sample: Sample,
                    convert: Callable[[str, bytes], bytes]) -> bytes:
        """The JSON of the sample, converted by `convert(type_name, data)` when not kept."""
        js = self.json(entry, sample)
        if js is None:
            js = self.put_json(entry, sample, convert(entry.type_name, sample.data))
        return js

    def body(self, view: View, entry: _Entry, generation: int) -> bytes | None:
        """The cached answer of this view while it holds (entry: what the pool holds now)."""
        got = self._bodies.get(view)
        if got is None or got.generation != generation \
                or not self._fresh(entry, got.entry, got.sample):
            return None
        return got.body

    def put(self, view: View, entry: _Entry, sample: Sample, generation: int,
            body: bytes) -> bytes:
        """Keep the answer of this view, built from the entry's sample at this generation."""
        if len(self._bodies) >= MAX_BODIES and view not in self._bodies:
            self._bodies.clear()
        self._bodies[view] = _Body(entry, sample, generation, body)
        return body

    def offer(self, state: GatewayState, request: web.Request, view: View) -> None:
        """Offer the fast path the replay of this view's stored answer (just served)."""
        if state.hot_answers is not None:
            probe = self.replay(state.cache, view)
            if probe is not None:
                hot.offer(state, request, probe)

    def replay(self, cache: EntityCache, view: View) -> hot.Probe | None:
        """The view's stored answer for the fast path while the policy holds (None when none
        is stored), counted as the generic read counts it. This runs once per hot read:
        `body`'s checks inlined, and the counters too (an entity-cache hit for the entity's
        topics, which the generic read finds cached unless the cache dropped them meanwhile,
        rebuilding the same topics at the same generation; the pool's hit and LRU refresh).
        """
        got = self._bodies.get(view)
        if got is None:
            return None
        entry, sample, generation, body = got.entry, got.sample, got.generation, got.body
        pool, topic = self.pool, entry.topic
        refresh = pool.refresh

        def probe() -> bytes | None:
            if entry.sample is not sample or not entry.held or cache.generation != generation:
                return None
            cache.hits += 1
            pool.hits += 1
            refresh(topic)
            return body

        return probe


_OWNERS: weakref.WeakKeyDictionary[SamplePool, DataReads] = weakref.WeakKeyDictionary()


def reads_of(state: GatewayState) -> DataReads:
    """The data-read body cache of this gateway's sample pool (made on first use)."""
    pool = state.pool
    reads = _OWNERS.get(pool)
    if reads is None:
        reads = _OWNERS[pool] = DataReads(pool)
    return reads
