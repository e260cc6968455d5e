"""Participants bound on this host but not discovered (pure logic, explicit now)."""

from __future__ import annotations

from gateway.ros.rejoin.unseen import UnseenParticipants

WALL = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def test_a_shortfall_shorter_than_the_window_is_not_reported() -> None:
    u = UnseenParticipants(window_s=10)
    assert u.observe(3, 2, now=100, wall=WALL) is None
    assert u.observe(3, 2, now=109.9, wall=WALL + 9.9) is None
    assert u.observe(3, 3, now=110, wall=WALL + 10) is None  # discovered in time
    assert u.health() == {"participants_unseen": 0, "participants_unseen_since": None}


def test_a_shortfall_past_the_window_is_reported_once_with_its_start() -> None:
    u = UnseenParticipants(window_s=10)
    assert u.observe(3, 2, now=100, wall=WALL) is None
    assert u.observe(3, 2, now=110, wall=WALL + 10) == "unseen"
    assert u.observe(3, 2, now=115, wall=WALL + 15) is None  # one warning per episode
    assert u.health() == {"participants_unseen": 1,
                          "participants_unseen_since": "2027-01-15T08:00:00Z"}


def test_the_count_follows_the_shortfall_and_clears_when_they_match() -> None:
    u = UnseenParticipants(window_s=10)
    u.observe(3, 2, now=100, wall=WALL)
    u.observe(3, 2, now=110, wall=WALL + 10)
    assert u.observe(4, 2, now=115, wall=WALL + 15) is None
    assert u.unseen == 2
    assert u.observe(4, 4, now=120, wall=WALL + 20) == "cleared"
    assert u.health() == {"participants_unseen": 0, "participants_unseen_since": None}
    # a new shortfall starts its own window
    assert u.observe(4, 3, now=121, wall=WALL + 21) is None
    assert u.observe(4, 3, now=130, wall=WALL + 30) is None
    assert u.observe(4, 3, now=131, wall=WALL + 31) == "unseen"


def test_more_discovered_than_bound_is_no_shortfall() -> None:
    # participants on other hosts are discovered but not bound here
    u = UnseenParticipants(window_s=10)
    assert u.observe(2, 5, now=100, wall=WALL) is None
    assert u.observe(2, 5, now=200, wall=WALL + 100) is None
    assert u.unseen == 0


def test_an_unknown_count_is_no_shortfall() -> None:
    u = UnseenParticipants(window_s=10)
    u.observe(3, 2, now=100, wall=WALL)
    assert u.observe(3, 2, now=110, wall=WALL + 10) == "unseen"
    assert u.observe(None, 2, now=111, wall=WALL + 11) == "cleared"
    assert u.observe(3, None, now=130, wall=WALL + 30) is None
    assert u.unseen == 0
