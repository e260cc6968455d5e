"""A changed file is loaded only once its stamp held still for the settle window."""

from __future__ import annotations

from gateway.discovery.settle import Settle


def test_a_change_is_due_once_it_held_still_for_the_window() -> None:
    s = Settle("v1", 0.5)
    assert not s.pending and not s.due("v1", 0.0)
    assert not s.due("half", 1.0) and s.pending  # just seen
    assert not s.due("half", 1.4)
    assert not s.due("whole", 1.45)  # written on: the window starts again
    assert not s.due("whole", 1.9)
    assert s.due("whole", 1.95) and not s.pending
    assert not s.due("whole", 5.0)  # loaded: nothing more to do


def test_a_change_undone_before_it_settled_is_not_loaded() -> None:
    s = Settle("v1", 0.5)
    assert not s.due("v2", 0.0)
    assert not s.due("v1", 0.2) and not s.pending
    assert not s.due("v1", 9.0)


def test_no_window_loads_at_first_sight() -> None:
    assert Settle("v1", 0.0).due("v2", 0.0)
