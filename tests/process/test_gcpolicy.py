"""The garbage collector policy: startup heap frozen out of collections, pauses counted."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gateway.process.gcpolicy import GcPolicy


class _Marker:
    pass


@pytest.fixture
def restore_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def _tracked(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects())


def test_settle_freezes_the_heap_and_times_full_collections(restore_gc: None) -> None:
    before = _Marker()
    assert _tracked(before)
    policy = GcPolicy()
    policy.settle(freeze=True, young_threshold=5000)
    try:
        assert gc.get_threshold()[0] == 5000
        # objects alive at start are out of every collection; newer ones are not
        after = _Marker()
        assert not _tracked(before) and _tracked(after)
        gc.collect()
        health = policy.health()
        assert health["frozen_objects"] > 0 and health["threshold"][0] == 5000
        assert health["collections"][2] >= 1 and health["max_pause_ms"][2] >= 0.0
    finally:
        policy.close()
    full = policy.health()["collections"][2]
    gc.collect()  # closed: no longer counted
    assert policy.health()["collections"][2] == full


def test_settle_without_freeze_or_threshold_changes_nothing(restore_gc: None) -> None:
    threshold = gc.get_threshold()
    policy = GcPolicy()
    policy.settle(freeze=False, young_threshold=0)
    try:
        marker = _Marker()
        assert gc.get_threshold() == threshold and _tracked(marker)
        assert policy.health()["frozen_objects"] == gc.get_freeze_count() == 0
    finally:
        policy.close()
