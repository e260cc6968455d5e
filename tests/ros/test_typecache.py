"""The run-time type build cache (ros/interfaces/typecache.py): pruned by age and size at start."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from gateway.ros.interfaces.typecache import DAY_S, CachedBuild, prune, to_prune, touch

NOW = 1_000_000_000.0
MIB = 1 << 20


def test_old_builds_go_then_the_least_recently_used_until_the_rest_fit() -> None:
    builds = [CachedBuild("old", MIB, NOW - 40 * DAY_S), CachedBuild("a", 3 * MIB, NOW - 9),
              CachedBuild("b", 3 * MIB, NOW - 5), CachedBuild("c", 3 * MIB, NOW - 1)]
    assert to_prune(builds, 10 * MIB, 30 * DAY_S, NOW) == ["old"]
    assert to_prune(builds, 6 * MIB, 30 * DAY_S, NOW) == ["old", "a"]
    assert to_prune(builds, 0, 30 * DAY_S, NOW) == ["old", "a", "b", "c"]


def test_a_build_in_use_never_goes() -> None:
    builds = [CachedBuild("old", MIB, NOW - 40 * DAY_S), CachedBuild("a", 3 * MIB, NOW - 9),
              CachedBuild("b", 3 * MIB, NOW - 5)]
    assert to_prune(builds, 3 * MIB, 30 * DAY_S, NOW, in_use={"old", "a"}) == ["b"]


def _build(root: Path, name: str, size: int, used: float) -> Path:
    prefix = root / name
    (prefix / "lib").mkdir(parents=True)
    (prefix / "lib" / "libx.so").write_bytes(b"x" * size)
    (prefix / "BUILT").write_text("[]")
    os.utime(prefix / "BUILT", (used, used))
    return prefix


def test_prune_deletes_and_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import time

    now = time.time()
    _build(tmp_path, "aaaa", 1000, now - 40 * DAY_S)
    _build(tmp_path, "bbbb", 1000, now - 10)
    _build(tmp_path, "cccc", 1000, now - 5)
    unfinished = tmp_path / "cccc"  # a build without BUILT is left alone
    (tmp_path / "dddd").mkdir()
    dead = tmp_path / f"eeee.tmp{2**22 + 12345}-1"  # a pid no process has
    dead.mkdir()
    mine = tmp_path / f"ffff.tmp{os.getpid()}-1"
    mine.mkdir()
    with caplog.at_level(logging.INFO, "gateway.ros.interfaces.typecache"):
        gone = prune(tmp_path, 1500, 30 * DAY_S, now)
    assert sorted(gone) == ["aaaa", "bbbb", dead.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cccc", "dddd", mine.name]
    assert unfinished.is_dir()
    assert "pruned 2 build(s)" in caplog.text and "aaaa, bbbb" in caplog.text, caplog.text


def test_a_served_build_counts_as_used_now(tmp_path: Path) -> None:
    import time

    now = time.time()
    prefix = _build(tmp_path, "aaaa", 10, now - 40 * DAY_S)
    touch(prefix)
    assert prune(tmp_path, 1 << 30, 30 * DAY_S, time.time()) == []
    assert prune(tmp_path / "missing", 0, 0, now) == []
