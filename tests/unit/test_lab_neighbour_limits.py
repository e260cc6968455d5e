"""The fleet lab raises the kernel's ARP table limits for large labs and restores them
(tests/fleet/lab.py): one table serves every namespace, and past its limit robots' mDNS
announcements were dropped."""

from pathlib import Path

import pytest

from tests.fleet import lab


@pytest.fixture
def neigh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in (("gc_thresh1", 128), ("gc_thresh2", 512), ("gc_thresh3", 1024)):
        (tmp_path / name).write_text(f"{value}\n")
    monkeypatch.setattr(lab, "NEIGH", tmp_path)
    return tmp_path


def values(path: Path) -> list[int]:
    return [int((path / f"gc_thresh{k}").read_text()) for k in (1, 2, 3)]


def test_a_small_lab_leaves_the_kernel_alone(neigh: Path) -> None:
    assert lab.raise_neighbour_limits(8) is None  # the suite's labs: 3-6 robots
    assert values(neigh) == [128, 512, 1024]


def test_a_large_lab_gets_room_for_every_pair_of_hosts_and_gives_it_back(neigh: Path) -> None:
    old = lab.raise_neighbour_limits(101)
    assert old == {"gc_thresh1": 128, "gc_thresh2": 512, "gc_thresh3": 1024}
    assert values(neigh) == [101 * 101, 2 * 101 * 101, 4 * 101 * 101]
    lab.restore_neighbour_limits(old)
    assert values(neigh) == [128, 512, 1024]


def test_limits_already_higher_are_kept(neigh: Path) -> None:
    (neigh / "gc_thresh3").write_text("100000\n")
    old = lab.raise_neighbour_limits(40)
    assert old is not None
    assert values(neigh) == [1600, 3200, 100000]
