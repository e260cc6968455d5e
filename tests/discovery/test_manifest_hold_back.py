"""A settled manifest change that drops entities is held back until it held still longer."""

from __future__ import annotations

from gateway.discovery.pipeline import DROP_CONFIRM_S
from gateway.discovery.settle import Settle


def test_a_held_back_stamp_is_due_again_after_the_longer_window() -> None:
    s = Settle("whole", 0.5)
    assert not s.due("half", 1.0)
    assert s.due("half", 1.5)  # settled: the watcher loads it and sees apps dropped
    assert s.held(1.5) < DROP_CONFIRM_S
    s.hold_back(DROP_CONFIRM_S)
    assert s.loaded == "whole" and s.pending  # the old manifest still counts as loaded
    assert not s.due("half", 1.0 + DROP_CONFIRM_S - 0.01)
    assert s.due("half", 1.0 + DROP_CONFIRM_S)  # held still long enough: a real shrink
    assert s.held(1.0 + DROP_CONFIRM_S) >= DROP_CONFIRM_S
    assert s.loaded == "half" and not s.pending


def test_a_writer_resuming_forgets_the_held_back_half() -> None:
    s = Settle("v1", 0.5)
    assert not s.due("v2-half", 0.0)
    assert s.due("v2-half", 0.5)
    s.hold_back(DROP_CONFIRM_S)
    assert not s.due("v2", 1.2)  # the writer resumed after a 1.2 s pause
    assert not s.due("v2", 1.6)
    assert s.due("v2", 1.7)  # the whole file settles in the ordinary window
    assert s.loaded == "v2"
    # the held-back window belonged to the half: a later change settles normally again
    assert not s.due("v3", 2.0) and s.due("v3", 2.5)


def test_a_file_put_back_while_held_back_changes_nothing() -> None:
    s = Settle("v1", 0.5)
    assert not s.due("half", 0.0) and s.due("half", 0.5)
    s.hold_back(DROP_CONFIRM_S)
    assert not s.due("v1", 0.6) and not s.pending  # the old content is back: loaded already
    assert not s.due("v1", 10.0)
