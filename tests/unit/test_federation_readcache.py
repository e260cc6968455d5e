"""The read cache of merged reads: validity by age and by peer change signals."""

from __future__ import annotations

from federation.readcache import ReadCache


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
