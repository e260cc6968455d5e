"""Data-read body caching (gateway/data/reads.py): one owner of the cache, its
policy and its replay. The replay (the fast path's probe) answers exactly what the generic
read's lookup (`DataReads.body`) answers, and stops when it does: a new sample, the entry
evicted or re-subscribed for another type, a new entity-set generation."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

from gateway.data.reads import DataReads, reads_of
from gateway.discovery.cache import EntityCache
from gateway.discovery.runtime import HostInfo
from gateway.ros.topics.pool import Sample, SamplePool, _Entry

TOPIC, TYPE = "/chatter", "std_msgs/msg/String"
VIEW = ("apps", "talker", TOPIC)


class Bridge:
    """What the pool asks of the ROS bridge here: run (subscribing and dropping do nothing)."""

    async def run(self, fn: Any, *args: Any, what: str = "") -> None:
        return None


def _pool(cap: int = 8) -> SamplePool:
    return SamplePool(Bridge(), cap)  # type: ignore[arg-type]


def _cache() -> EntityCache:
    return EntityCache(16, HostInfo("h", "Linux", "x86_64"))


def _receive(entry: _Entry, data: bytes = b"\0\1\0\0") -> Sample:
    """A new sample arrives (what the pool's subscription callback does)."""
    entry.seq += 1
    entry.sample = Sample(data, 0, entry.seq, entry.seq)
    return entry.sample


def _setup() -> tuple[SamplePool, EntityCache, DataReads, _Entry, Sample]:
    pool = _pool()
    entry = asyncio.run(pool._entry(TOPIC, TYPE))
    return pool, _cache(), DataReads(pool), entry, _receive(entry)


def both(reads: DataReads, cache: EntityCache, entry: _Entry) -> tuple[bytes | None, Any]:
    """The generic read's lookup and the fast path's probe, made now."""
    probe = reads.replay(cache, VIEW)
    return reads.body(VIEW, entry, cache.generation), None if probe is None else probe()


def test_the_replay_answers_the_stored_body_while_it_holds() -> None:
    pool, cache, reads, entry, sample = _setup()
    assert both(reads, cache, entry) == (None, None)
    body = reads.put(VIEW, entry, sample, cache.generation, b'{"id":"/chatter"}')
    generic, fast = both(reads, cache, entry)
    assert generic is body and fast is body  # the very bytes object, kept per connection
    probe = reads.replay(cache, VIEW)
    assert probe is not None
    for _ in range(3):
        assert probe() is body


def test_the_replay_counts_like_the_generic_read() -> None:
    pool, cache, reads, entry, sample = _setup()
    other = asyncio.run(pool._entry("/other", TYPE))
    reads.put(VIEW, entry, sample, cache.generation, b"{}")
    assert next(reversed(pool._entries)) == "/other"
    probe = reads.replay(cache, VIEW)
    assert probe is not None
    hits, cache_hits = pool.hits, cache.hits
    probe()
    # a pool hit and the topic made the most recently used; the entity's topics: a cache hit
    assert (pool.hits, cache.hits) == (hits + 1, cache_hits + 1)
    assert next(reversed(pool._entries)) == TOPIC
    assert other.held


def test_a_new_sample_ends_both() -> None:
    pool, cache, reads, entry, sample = _setup()
    reads.put(VIEW, entry, sample, cache.generation, b"{}")
    probe = reads.replay(cache, VIEW)
    _receive(entry)
    assert both(reads, cache, entry) == (None, None)
    assert probe is not None and probe() is None


def test_a_new_generation_ends_both() -> None:
    pool, cache, reads, entry, sample = _setup()
    reads.put(VIEW, entry, sample, cache.generation, b"{}")
    probe = reads.replay(cache, VIEW)
    cache.generation += 1  # what apply/remerge do
    assert both(reads, cache, entry) == (None, None)
    assert probe is not None and probe() is None


@pytest.mark.parametrize("how", ["evicted", "retyped"])
def test_an_entry_leaving_the_pool_ends_both(how: str) -> None:
    pool, cache = _pool(cap=1), _cache()
    reads = DataReads(pool)
    entry = asyncio.run(pool._entry(TOPIC, TYPE))
    sample = _receive(entry)
    reads.put(VIEW, entry, sample, cache.generation, b"{}")
    probe = reads.replay(cache, VIEW)
    if how == "evicted":
        asyncio.run(pool._entry("/other", TYPE))  # cap 1: the read topic is dropped
        now = entry
    else:
        now = asyncio.run(pool._entry(TOPIC, "std_msgs/msg/Float32"))
        now.sample = sample  # even holding the same sample object, the entry is another
    assert not entry.held
    assert reads.body(VIEW, now, cache.generation) is None
    assert probe is not None and probe() is None


def test_the_json_of_a_sample_is_converted_once() -> None:
    pool, cache, reads, entry, first = _setup()
    calls: list[str] = []

    def convert(type_name: str, data: bytes) -> bytes:
        calls.append(type_name)
        return b'{"n":%d}' % len(calls)

    assert reads.json(entry, first) is None
    assert reads.sample_json(entry, first, convert) == b'{"n":1}'
    assert reads.sample_json(entry, first, convert) == b'{"n":1}' and calls == [TYPE]
    second = _receive(entry)
    assert reads.json(entry, second) is None
    assert reads.sample_json(entry, second, convert) == b'{"n":2}'


def test_one_owner_per_pool() -> None:
    state = types.SimpleNamespace(pool=_pool())
    other = types.SimpleNamespace(pool=_pool())
    assert reads_of(state) is reads_of(state)  # type: ignore[arg-type]
    assert reads_of(other) is not reads_of(state)  # type: ignore[arg-type]


def test_the_pool_keeps_no_body() -> None:
    """The body cache lives in data_reads.py only: the pool's entries hold samples."""
    assert not {"bodies", "json", "json_seq"} & set(_Entry.__slots__)
