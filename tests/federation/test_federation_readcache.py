"""The read cache of merged reads: validity by age and by peer change signals."""

from __future__ import annotations

import pytest

from gateway.federation import readcache
from gateway.federation.readcache import ReadCache


def test_answers_expire_with_age_and_with_change_signals() -> None:
    cache = ReadCache(max_age_s=10.0)
    v = cache.version("a")
    cache.put(("a", "/x"), "answer-a", fetched=100.0, version=v)
    cache.put(("b", "/x"), "answer-b", fetched=100.0, version=cache.version("b"))
    assert cache.get("a", ("a", "/x"), now=105.0) == ("answer-a", 5.0, 100.0)
    assert cache.get("a", ("a", "/x"), now=110.5) is None  # older than the bound
    cache.peer_changed("a")  # e.g. a fault event relayed from peer a
    assert cache.get("a", ("a", "/x"), now=101.0) is None
    assert cache.get("b", ("b", "/x"), now=101.0) == ("answer-b", 1.0, 100.0)
    cache.all_changed()  # the peer table changed
    assert cache.get("b", ("b", "/x"), now=101.0) is None
    assert cache.stats()["hits"] == 2 and cache.stats()["invalidations"] == 2


def test_an_answer_fetched_across_a_change_is_stale_at_once() -> None:
    cache = ReadCache(max_age_s=10.0)
    version = cache.version("a")  # taken before the fetch
    cache.peer_changed("a")  # the peer changed while its answer was on the way
    cache.put(("a", "/x"), "old", fetched=100.0, version=version)
    assert cache.get("a", ("a", "/x"), now=100.0) is None


def test_merged_bodies_hold_until_a_signal_a_new_stamp_or_the_age_bound() -> None:
    cache = ReadCache(max_age_s=10.0)
    key = (("components", "host"), "data", "")
    cache.body_put(key, stamp=7, epoch=cache.epoch, oldest=100.0, head=b'{"age_ms":',
                   tail=b"}")
    assert cache.body_get(key, 7, now=102.5) == b'{"age_ms":2500}'  # the age of this read
    assert cache.body_get(key, 8, now=102.5) is None  # the local part changed
    assert cache.body_get(key, 7, now=110.5) is None  # its oldest answer is past the bound
    assert cache.body_get(("other",), 7, now=101.0) is None
    cache.peer_changed("a")  # any peer's signal: the merged bodies hold every peer's part
    assert cache.body_get(key, 7, now=101.0) is None
    stats = cache.stats()
    assert stats["body_hits"] == 1 and stats["hits"] == 1 and stats["bodies"] == 1


def test_a_body_built_across_a_change_is_stale_at_once() -> None:
    cache = ReadCache(max_age_s=10.0)
    epoch = cache.epoch  # taken before the peers were asked
    cache.all_changed()
    cache.body_put("k", stamp=None, epoch=epoch, oldest=100.0, head=b"", tail=b"")
    assert cache.body_get("k", None, now=100.0) is None


def test_merged_bodies_are_bounded_in_bytes_the_oldest_going_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each caller's merged body is kept apart: what is kept stays within MAX_BODY_BYTES (and
    MAX_BODIES), the oldest kept dropped first; a body larger than the bound is not kept."""
    monkeypatch.setattr(readcache, "MAX_BODY_BYTES", 1000)
    monkeypatch.setattr(readcache, "MAX_BODIES", 4)
    cache = ReadCache(max_age_s=10.0)
    for k in range(3):
        cache.body_put(k, stamp=0, epoch=cache.epoch, oldest=100.0, head=b"h" * 300, tail=b"")
    assert cache.stats()["body_bytes"] == 900
    cache.body_put(3, stamp=0, epoch=cache.epoch, oldest=100.0, head=b"h" * 300, tail=b"")
    assert cache.body_get(0, 0, now=100.0) is None  # the oldest made room
    assert all(cache.body_get(k, 0, now=100.0) is not None for k in (1, 2, 3))
    assert cache.stats()["body_bytes"] == 900
    cache.body_put(2, stamp=0, epoch=cache.epoch, oldest=100.0, head=b"h" * 50, tail=b"")
    assert cache.stats()["body_bytes"] == 650  # a body kept again replaces its bytes
    for k in range(4, 8):  # small ones: the count bounds too
        cache.body_put(k, stamp=0, epoch=cache.epoch, oldest=100.0, head=b"h", tail=b"")
    assert cache.stats()["bodies"] == 4
    cache.body_put("huge", stamp=0, epoch=cache.epoch, oldest=100.0, head=b"h" * 1001,
                   tail=b"")
    assert cache.body_get("huge", 0, now=100.0) is None and cache.stats()["bodies"] == 4
