"""Readiness from the participant census (pure logic, explicit now)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from gateway.discovery.readiness import Readiness
from gateway.ros.graph.census import UNKNOWN_NODE, count, missing


@dataclass
class Endpoint:
    """The two fields of rclpy's TopicEndpointInfo the census reads."""

    node_name: str
    endpoint_gid: list[int]


def gid(participant: int, entity: int) -> list[int]:
    """A 16-byte GID: a 12-byte participant prefix and a 4-byte entity id."""
    return [participant] * 12 + [0, 0, 0, entity]


def test_census_is_complete_when_every_participant_has_named_nodes() -> None:
    discovery = [Endpoint(UNKNOWN_NODE, gid(p, 1)) for p in (1, 2, 3)]
    rosout = [Endpoint("a", gid(1, 7)), Endpoint("b", gid(2, 7)), Endpoint("c", gid(3, 7)),
              Endpoint("d", gid(3, 8))]  # two nodes in participant 3
    census = count(discovery, rosout)
    assert census.complete and len(census.participants) == 3


def test_census_is_incomplete_while_a_participant_has_no_nodes_known() -> None:
    discovery = [Endpoint(UNKNOWN_NODE, gid(p, 1)) for p in (1, 2)]
    assert not count(discovery, [Endpoint("a", gid(1, 7))]).complete  # 2: nodes not yet seen
    unnamed = count(discovery, [Endpoint("a", gid(1, 7)), Endpoint(UNKNOWN_NODE, gid(2, 7))])
    assert not unnamed.complete and unnamed.unnamed_endpoints == 1  # 2's node info pending
    # a /rosout writer counts only once its participant told its node names
    assert count(discovery, [Endpoint("a", gid(1, 7)), Endpoint("b", gid(2, 9))]).complete
    assert count([], []).complete  # nothing discovered: nothing missing


def test_complete_census_is_ready_after_the_announcements_and_a_quiet_window() -> None:
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=15.0)
    assert not r.observe(True, 0.05, complete=True)  # first poll: a change
    assert not r.observe(False, 0.3, complete=True)  # quiet, but still announcing
    assert not r.observe(True, 0.4, complete=True)  # a participant answered late
    assert not r.observe(False, 0.6, complete=True)  # 0.2 s quiet only
    assert r.observe(False, 0.75, complete=True) and r.ready_at == 0.75 and r.reason == "complete"
    assert r.observe(True, 0.8)  # ready stays ready


def test_incomplete_census_waits_for_the_graph_to_settle() -> None:
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=15.0)
    assert not r.observe(True, 0.1, complete=False)
    assert not r.observe(False, 1.0, complete=False)  # complete would be ready by now
    assert r.observe(False, 1.6, complete=False) and r.reason == "settled"


def test_a_graph_that_never_settles_is_ready_at_the_cap() -> None:
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=3.0)
    assert not any(r.observe(True, t / 10, complete=True) for t in range(29))
    assert r.observe(True, 3.0, complete=True) and r.reason == "cap"


def test_time_spent_waiting_for_a_cpu_does_not_count_towards_the_windows() -> None:
    # The run clock stood still for 2 s of wall time (the machine was saturated): the census
    # looks complete, but the announcement window has not passed on the run clock.
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=15.0)
    assert not r.observe(True, 0.05, complete=True, wall=0.05)
    assert not r.observe(False, 0.2, complete=True, wall=2.2)
    assert not r.observe(False, 0.45, complete=True, wall=4.0)
    assert r.observe(False, 0.6, complete=True, wall=4.1) and r.reason == "complete"
    assert r.ready_at == 4.1  # reported on the wall clock


def test_the_cap_is_on_the_wall_clock() -> None:
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=3.0)
    assert not r.observe(True, 0.1, complete=False, wall=2.9)
    assert r.observe(True, 0.2, complete=False, wall=3.0) and r.reason == "cap"


def test_run_clock_runs_behind_the_wall_by_the_cpu_wait() -> None:
    from gateway.discovery.runclock import RunClock, waited_s

    if waited_s() is None:
        pytest.skip("no /proc/thread-self/schedstat here")
    clock = RunClock()
    start = clock.now(0.0)
    assert start <= 0.0
    # Busy processes, more than the cores, make this thread wait for a CPU now and then.
    spinners = [subprocess.Popen([sys.executable, "-c", "while 1: pass"])
                for _ in range(2 * (os.cpu_count() or 1) + 1)]
    try:
        deadline = time.monotonic() + 60
        while clock.now(0.0) >= start and time.monotonic() < deadline:
            sum(range(10000))
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert clock.now(0.0) < start  # waiting was taken off


def test_only_the_gateways_own_participant_is_not_a_complete_census() -> None:
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=15.0)
    assert not r.observe(True, 0.05, complete=True, others=0)
    assert not r.observe(False, 1.0, complete=True, others=0)  # complete would be ready
    assert r.observe(False, 1.6, complete=True, others=0) and r.reason == "settled"


def test_a_slow_first_answer_lengthens_the_quiet_window() -> None:
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=5.0, cap_s=15.0)
    assert not r.observe(True, 0.05, complete=True, others=0)
    assert not r.observe(True, 1.2, complete=True, others=3)  # the first answer, 1.2 s late
    assert not r.observe(False, 2.0, complete=True, others=3)  # 0.8 s quiet: more may come
    assert not r.observe(True, 2.1, complete=True, others=9)  # and they did
    assert not r.observe(False, 3.2, complete=True, others=9)
    assert r.observe(False, 3.4, complete=True, others=9) and r.reason == "complete"


def test_a_prompt_first_answer_keeps_the_short_quiet_window() -> None:
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=15.0)
    assert not r.observe(True, 0.05, complete=True, others=0)
    assert not r.observe(True, 0.1, complete=True, others=14)
    assert not r.observe(False, 0.35, complete=True, others=14)
    assert r.observe(False, 0.5, complete=True, others=14) and r.reason == "complete"


def test_fewer_participants_than_bound_on_this_host_is_not_complete() -> None:
    # 14 participants bound here, 9 discovered: however quiet, not complete (the rest answer
    # at their next announcement); the settle rule still ends a wait for one that never does.
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=15.0)
    assert not r.observe(True, 0.05, complete=True, others=8, local=14)
    assert not r.observe(False, 1.0, complete=True, others=8, local=14)
    assert not r.observe(True, 1.1, complete=True, others=13, local=14)
    assert r.observe(False, 1.45, complete=True, others=13, local=14) and r.reason == "complete"


def test_the_gateways_own_participant_counts_among_those_bound() -> None:
    # 3 bound (the gateway's own and two), the census holds two: the own one not yet listed.
    r = Readiness(start=0.0, announce_s=0.5, quiet_s=0.3, settle_s=1.5, cap_s=15.0)
    assert not r.observe(True, 0.05, complete=True, others=1, local=3)
    assert not r.observe(False, 0.9, complete=True, others=1, local=3)


def test_a_closed_world_with_every_local_participant_is_ready_after_a_short_quiet() -> None:
    r = Readiness(start=0.0, announce_s=1.0, quiet_s=0.3, settle_s=1.5, cap_s=15.0,
                  closed=True, whole_quiet_s=0.15)
    assert not r.observe(True, 0.05, complete=True, others=5, local=15)
    assert not r.observe(True, 0.2, complete=True, others=14, local=15)
    assert not r.observe(False, 0.3, complete=False, others=14, local=15)  # nodes not known
    assert not r.observe(True, 0.35, complete=True, others=14, local=15)
    assert r.observe(False, 0.5, complete=True, others=14, local=15) and r.reason == "complete"
    assert r.ready_at == 0.5  # before the announcement window and the first-answer window


def test_an_open_world_still_waits_for_the_announcements() -> None:
    # Other hosts' participants can answer too: the local count is only a lower bound.
    r = Readiness(start=0.0, announce_s=1.0, quiet_s=0.3, settle_s=1.5, cap_s=15.0,
                  closed=False)
    assert not r.observe(True, 0.05, complete=True, others=14, local=15)
    assert not r.observe(False, 0.5, complete=True, others=14, local=15)
    assert r.observe(False, 1.0, complete=True, others=14, local=15) and r.reason == "complete"


def test_an_empty_closed_world_is_ready_at_once_with_no_count_it_settles() -> None:
    closed = Readiness(start=0.0, quiet_s=0.3, settle_s=1.5, closed=True, whole_quiet_s=0.15)
    assert not closed.observe(True, 0.05, complete=True, others=0, local=1)
    assert closed.observe(False, 0.2, complete=True, others=0, local=1)
    unknown = Readiness(start=0.0, quiet_s=0.3, settle_s=1.5, closed=True)
    assert not unknown.observe(True, 0.05, complete=True, others=0, local=None)
    assert not unknown.observe(False, 1.0, complete=True, others=0, local=None)
    assert unknown.observe(False, 1.6, complete=True, others=0, local=None)
    assert unknown.reason == "settled"


def test_a_rejoin_waits_only_for_endpoints_of_participants_it_discovered() -> None:
    """The endpoints of a participant the new one has not discovered (frozen, gone) do not
    count as missing; those of one it has discovered do."""
    a, b = b"A" * 12, b"B" * 12
    known = frozenset({a + b"\0\0\0\1", a + b"\0\0\0\2", b + b"\0\0\0\1"})
    assert missing(known, frozenset({a + b"\0\0\0\1"}), frozenset({a})) == 1
    assert missing(known, frozenset({a + b"\0\0\0\1", a + b"\0\0\0\2"}), frozenset({a})) == 0
    assert missing(known, frozenset({a + b"\0\0\0\1", a + b"\0\0\0\2"}),
                   frozenset({a, b})) == 1
