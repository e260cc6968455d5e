"""The fleet lab raises the kernel's network limits for large labs and restores them
(tests/fleet/lab.py): one ARP table and one input backlog serve every namespace, and past
their defaults robots' mDNS announcements and fan-out segments were dropped."""

from pathlib import Path

import pytest

from tests.fleet import lab

DEFAULTS = {"ipv4/neigh/default/gc_thresh1": 128, "ipv4/neigh/default/gc_thresh2": 512,
            "ipv4/neigh/default/gc_thresh3": 1024, "core/netdev_max_backlog": 1000}


@pytest.fixture
def sysctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in DEFAULTS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"{value}\n")
    monkeypatch.setattr(lab, "SYSCTL", tmp_path)
    return tmp_path


def values(path: Path) -> dict[str, int]:
    return {name: int((path / name).read_text()) for name in DEFAULTS}


def test_a_small_lab_leaves_the_kernel_alone(sysctl: Path) -> None:
    assert lab.raise_kernel_limits(8) is None  # the suite's labs: 3-6 robots
    assert values(sysctl) == DEFAULTS


def test_a_large_lab_gets_room_for_every_pair_of_hosts_and_gives_it_back(sysctl: Path) -> None:
    old = lab.raise_kernel_limits(101)
    assert old == DEFAULTS
    assert values(sysctl) == {"ipv4/neigh/default/gc_thresh1": 101 * 101,
                              "ipv4/neigh/default/gc_thresh2": 2 * 101 * 101,
                              "ipv4/neigh/default/gc_thresh3": 4 * 101 * 101,
                              "core/netdev_max_backlog": 10100}
    lab.restore_kernel_limits(old)
    assert values(sysctl) == DEFAULTS


def test_limits_already_higher_are_kept(sysctl: Path) -> None:
    (sysctl / "ipv4/neigh/default/gc_thresh3").write_text("100000\n")
    assert lab.raise_kernel_limits(40) is not None
    assert values(sysctl)["ipv4/neigh/default/gc_thresh3"] == 100000
    assert values(sysctl)["ipv4/neigh/default/gc_thresh1"] == 1600
