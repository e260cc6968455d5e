"""Whether the gateway's DDS side hears (ros/rejoin/hearing.py): candidates, confirmation by a
fresh participant, rejoins, recovery."""

from __future__ import annotations

from gateway.ros.rejoin.hearing import (
    ECHO_MISSES,
    EXCUSE_S,
    KNOWN_SUSPECT_S,
    MIN_CHECKS,
    NEW_SUSPECT_S,
    SILENT_MIN_S,
    Hearing,
    silent_topics,
)

OWN, NODE, OTHER = 100, 4242, 4343


def unheard_for(h: Hearing, seconds: float, known: set[int], owners: dict[int, str],
                start: float = 0.0) -> list[int]:
    """Checks every 0.5 s with the given owners undiscovered; the last check's due pids."""
    due: list[int] = []
    t = start
    while t <= start + seconds + 1e-9:
        due = h.observe_graph(owners, [OWN], known, t)
        t += 0.5
    return due


def test_a_known_participant_gone_while_it_runs_is_asked_about_after_the_wait() -> None:
    h = Hearing(own_pid=OWN)
    owners = {OWN: "S", NODE: "S"}
    assert unheard_for(h, KNOWN_SUSPECT_S - 0.5, {NODE}, owners) == []
    assert h.observe_graph(owners, [OWN], {NODE}, KNOWN_SUSPECT_S) == [NODE]
    assert not h.deaf  # a candidate is not deafness
    h.probed_graph([NODE], [NODE], KNOWN_SUSPECT_S)
    assert h.update(KNOWN_SUSPECT_S, 1000.0) == "deaf"
    assert h.deaf and h.needs_rejoin and f"pid {NODE}" in (h.reason or "")
    assert h.observe_graph(owners, [OWN], {NODE}, 5.0) == []  # confirmed: not asked again
    assert h.update(5.0, 1002.0) is None and h.deaf


def test_a_participant_never_discovered_waits_longer() -> None:
    h = Hearing(own_pid=OWN)
    owners = {OWN: "S", NODE: "R"}
    assert unheard_for(h, NEW_SUSPECT_S - 0.5, set(), owners) == []
    assert h.observe_graph(owners, [OWN], set(), NEW_SUSPECT_S) == [NODE]


def test_stopped_and_own_processes_are_never_candidates() -> None:
    h = Hearing(own_pid=OWN)
    owners = {OWN: "S", NODE: "T", OTHER: "t"}
    assert unheard_for(h, 30, {NODE, OTHER}, owners) == []
    assert not h.watching()


def test_a_changing_set_of_candidates_needs_several_agreeing_checks() -> None:
    h = Hearing(own_pid=OWN)
    h.observe_graph({OWN: "S", NODE: "S"}, [OWN], {NODE, OTHER}, 0.0)
    # OTHER joins the set late: the set changed, so MIN_CHECKS checks must agree again
    due = h.observe_graph({OWN: "S", NODE: "S", OTHER: "S"}, [OWN], {NODE, OTHER}, 10.0)
    assert due == [] and h.checks == 1
    for i in range(1, MIN_CHECKS):
        due = h.observe_graph({OWN: "S", NODE: "S", OTHER: "S"}, [OWN], {NODE, OTHER},
                              10.0 + KNOWN_SUSPECT_S + i)
    assert due == [NODE, OTHER]


def test_what_no_fresh_participant_hears_is_excused_for_a_while() -> None:
    h = Hearing(own_pid=OWN)
    owners = {OWN: "S", NODE: "S"}
    assert unheard_for(h, KNOWN_SUSPECT_S, {NODE}, owners) == [NODE]
    h.probed_graph([NODE], [], KNOWN_SUSPECT_S)  # a port holder without DDS behind it
    assert h.update(KNOWN_SUSPECT_S, 0.0) is None and not h.deaf
    assert not h.watching()
    assert h.observe_graph(owners, [OWN], {NODE}, KNOWN_SUSPECT_S + 10) == []
    assert h.observe_graph(owners, [OWN], {NODE}, KNOWN_SUSPECT_S + EXCUSE_S + 1) == [NODE]


def test_after_a_rejoin_it_stays_deaf_until_the_new_participant_hears() -> None:
    h = Hearing(own_pid=OWN)
    owners = {OWN: "S", NODE: "S"}
    unheard_for(h, KNOWN_SUSPECT_S, {NODE}, owners)
    h.probed_graph([NODE], [NODE], 3.0)
    h.update(3.0, 100.0)
    h.rejoined(4.0)
    assert h.deaf and not h.needs_rejoin  # checked again, not re-joined again at once
    assert h.update(4.0, 101.0) is None and "re-joined" in (h.reason or "")
    assert h.observe_graph(owners, [OWN], {NODE}, 4.5) == []
    # discovered by the new participant: recovered
    h.observe_graph({OWN: "S", NODE: "S"}, [OWN, NODE], {NODE}, 5.0)
    assert h.update(5.0, 102.0) == "recovered"
    assert not h.deaf and h.recoveries == 1 and h.last_recovery_s == 2.0
    assert h.health()["state"] == "hearing" and h.health()["last_recovered"].endswith("Z")


def test_still_unheard_after_a_rejoin_is_asked_about_again() -> None:
    h = Hearing(own_pid=OWN)
    owners = {OWN: "S", NODE: "S"}
    h.lost([NODE])  # the frozen-participant check re-joins for it
    assert h.update(0.0, 0.0) == "deaf"
    h.rejoined(0.0)
    due = unheard_for(h, KNOWN_SUSPECT_S, set(), owners, start=0.0)
    assert due == [NODE]  # the known wait, though never discovered by the gateway
    h.probed_graph(due, [NODE], KNOWN_SUSPECT_S)
    assert h.deaf and h.needs_rejoin  # the new participant does not hear it either


def test_silent_topics_are_those_quiet_for_many_of_their_periods() -> None:
    second = 1_000_000_000
    regular = tuple(i * second // 2 for i in range(20))  # 2 Hz for 10 s
    now = regular[-1] + int(SILENT_MIN_S * second) + 1
    stats = {"/regular": (regular, 20), "/few": (regular[:3], 3),
             "/slow": (tuple(i * 10 * second for i in range(20)), 20)}
    assert set(silent_topics(stats, now)) == {"/regular"}  # /slow: 20 periods are 200 s
    assert silent_topics(stats, regular[-1] + second) == {}


def test_topic_silence_confirmed_then_over() -> None:
    h = Hearing()
    h.probed_topics(["/a", "/b"], {"/a": 20.0})
    assert h.update(0.0, 0.0) == "deaf" and "/a" in (h.reason or "")
    assert "/b" not in (h.reason or "")  # a fresh participant hears /b no better
    h.rejoined(1.0)
    assert h.deaf and not h.needs_rejoin
    h.sample_received(["/a"])
    assert h.update(2.0, 2.0) == "recovered"


def test_an_executor_that_runs_no_callback_is_deaf_after_several_misses() -> None:
    h = Hearing()
    for _ in range(ECHO_MISSES - 1):
        h.echo("ros-executor", False)
    h.echo("ros-calls", True)
    assert h.update(0.0, 0.0) is None
    h.echo("ros-executor", False)
    assert h.update(0.0, 0.0) == "deaf" and "ros-executor" in (h.reason or "")
    assert h.needs_rejoin
    h.rejoined(1.0)  # new executors
    assert h.update(1.0, 1.0) == "recovered"
