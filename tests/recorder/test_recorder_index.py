"""The recording index: persistence, recovery at start, retention rules."""

from __future__ import annotations

import json
from pathlib import Path

from recorder.index import (
    INDEX_NAME,
    SIDECAR_NAME,
    RecorderLock,
    Recording,
    RecordingIndex,
    per_fault_excess,
    quota_evictions,
    write_atomic,
)


def rec(rec_id: str, created: int, size: int = 100, codes: tuple[str, ...] = ("A",)
        ) -> Recording:
    return Recording(rec_id, "mcap", f"{rec_id}_0.mcap", created, created - 5, created + 1,
                     size=size, fault_codes=list(codes), sources={c: ["/n"] for c in codes})


def make_bag(root: Path, r: Recording, sidecar: bool = True) -> None:
    bag = root / r.id
    bag.mkdir(parents=True)
    (bag / r.file).write_bytes(b"x" * r.size)
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    if sidecar:
        (bag / SIDECAR_NAME).write_text(json.dumps(r.to_dict()))


RID = "rec_20260101T000000{:03d}Z_abcdef"


def test_round_trip_and_queries(tmp_path: Path) -> None:
    idx = RecordingIndex(tmp_path)
    a, b = rec(RID.format(1), 10, codes=("A",)), rec(RID.format(2), 20, codes=("A", "B"))
    for r in (a, b):
        make_bag(tmp_path, r)
        idx.add(r)
    write_atomic(tmp_path / INDEX_NAME, idx.dumps())
    again = RecordingIndex(tmp_path)
    report = again.load()
    assert report.kept == 2 and not report.recovered and not report.dropped
    assert [r.id for r in again.for_code("A")] == [b.id, a.id]  # newest first
    assert again.get(b.id) == b and again.total_bytes() == 200
    assert again.file_of(a) == tmp_path / a.id / a.file
    assert again.remove(a.id) == a and again.remove(a.id) is None
    assert b.duration_sec == round(6 / 1e9, 3)


def test_recovery_discards_partial_and_recovers_unindexed_bags(tmp_path: Path) -> None:
    kept, lost, unindexed = rec(RID.format(1), 10), rec(RID.format(2), 20), rec(RID.format(3), 30)
    make_bag(tmp_path, kept)
    make_bag(tmp_path, unindexed)  # crash between the rename and the index write
    idx = RecordingIndex(tmp_path)
    idx.add(kept)
    idx.add(lost)  # indexed, but its directory is gone
    write_atomic(tmp_path / INDEX_NAME, idx.dumps())
    partial = tmp_path / (RID.format(4) + ".partial")  # mid-write when the process died
    partial.mkdir()
    (partial / "x_0.mcap").write_bytes(b"half")
    no_sidecar = rec(RID.format(5), 50)
    make_bag(tmp_path, no_sidecar, sidecar=False)
    (tmp_path / "notes").mkdir()  # not ours: left alone

    fresh = RecordingIndex(tmp_path)
    report = fresh.load()
    assert report.kept == 1
    assert report.recovered == [unindexed.id]
    assert report.discarded_partial == [RID.format(4)]
    assert sorted(report.dropped) == sorted([no_sidecar.id, lost.id])
    assert set(fresh.recordings) == {kept.id, unindexed.id}
    assert not partial.exists() and not (tmp_path / no_sidecar.id).exists()
    assert (tmp_path / "notes").exists()


def test_a_truncated_data_file_is_not_served(tmp_path: Path) -> None:
    r = rec(RID.format(1), 10, size=100)
    make_bag(tmp_path, r)
    (tmp_path / r.id / r.file).write_bytes(b"short")
    idx = RecordingIndex(tmp_path)
    idx.add(r)
    write_atomic(tmp_path / INDEX_NAME, idx.dumps())
    fresh = RecordingIndex(tmp_path)
    assert fresh.load().dropped == [r.id] and fresh.recordings == {}


def test_a_corrupt_index_is_rebuilt_from_the_bags(tmp_path: Path) -> None:
    r = rec(RID.format(1), 10)
    make_bag(tmp_path, r)
    (tmp_path / INDEX_NAME).write_text("{not json")
    fresh = RecordingIndex(tmp_path)
    assert fresh.load().recovered == [r.id]


def test_quota_evicts_oldest_first_and_keeps_the_newest() -> None:
    recs = [rec(RID.format(i), i, size=100) for i in range(5)]
    assert quota_evictions(recs, 500) == []
    assert quota_evictions(recs, 250) == [RID.format(0), RID.format(1), RID.format(2)]
    # the newest is kept even when it alone is over the quota
    assert quota_evictions(recs, 50, keep={RID.format(4)}) == [RID.format(i) for i in range(4)]


def test_per_fault_excess_keeps_the_newest() -> None:
    recs = [rec(RID.format(1), 1, codes=("A",)), rec(RID.format(2), 2, codes=("A", "B")),
            rec(RID.format(3), 3, codes=("A",))]
    assert per_fault_excess(recs, "A", 1) == [RID.format(2), RID.format(1)]
    assert per_fault_excess(recs, "A", 2) == [RID.format(1)]
    assert per_fault_excess(recs, "B", 1) == []


def test_dir_lock_is_exclusive(tmp_path: Path) -> None:
    first, second = RecorderLock(tmp_path), RecorderLock(tmp_path)
    assert first.acquire()
    assert not second.acquire()
    first.release()
    assert second.acquire()
    second.release()
