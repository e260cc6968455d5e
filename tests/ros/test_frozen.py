"""When the gateway re-joins DDS for a resumed participant it does not rediscover (frozen.py)."""

from __future__ import annotations

from gateway.ros.rejoin.frozen import (
    GRACE_S,
    INCOMPLETE_GRACE_S,
    FrozenWatch,
    pid_key,
    prefix_pid_key,
)

OWN = 100
TALKER = 4242


def prefix(pid: int, vendor: bytes = b"\x01\x0f") -> bytes:
    """A Fast DDS GUID prefix of a participant of process pid."""
    return vendor + b"\xaa\xbb" + (pid & 0xFFFF).to_bytes(2, "little") + b"\x11\x22" + bytes(4)


def test_a_fast_dds_prefix_holds_the_low_bits_of_the_pid() -> None:
    assert prefix_pid_key(prefix(TALKER)) == pid_key(TALKER) == TALKER
    assert prefix_pid_key(prefix(0x12345)) == 0x2345
    assert prefix_pid_key(prefix(TALKER, vendor=b"\x01\x10")) is None  # another vendor
    assert prefix_pid_key(b"\x01\x0f") is None


def frozen_then_resumed(watch: FrozenWatch, t: float = 0.0) -> float:
    """The talker discovered, stopped past its lease, then running again undiscovered."""
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN), prefix(TALKER)], t) == []
    assert watch.observe({OWN: "S", TALKER: "T"}, [prefix(OWN)], t + 4) == []
    return t + 5


def test_a_resumed_participant_not_rediscovered_within_the_grace_is_due() -> None:
    watch = FrozenWatch(own_pid=OWN)
    t = frozen_then_resumed(watch)
    assert watch.observe({OWN: "S", TALKER: "R"}, [prefix(OWN)], t) == []
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t + GRACE_S - 0.1) == []
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t + GRACE_S) == [TALKER]


def test_one_rediscovered_within_the_grace_is_not() -> None:
    watch = FrozenWatch(own_pid=OWN)
    t = frozen_then_resumed(watch)
    assert watch.observe({OWN: "S", TALKER: "R"}, [prefix(OWN)], t) == []
    both = [prefix(OWN), prefix(TALKER)]
    assert watch.observe({OWN: "S", TALKER: "S"}, both, t + 0.3) == []
    assert watch.observe({OWN: "S", TALKER: "S"}, both, t + 5) == []
    assert not watch.watching()


def test_a_stopped_owner_is_never_due() -> None:
    watch = FrozenWatch(own_pid=OWN)
    t = frozen_then_resumed(watch)
    for dt in (0, 2, 10, 60):
        assert watch.observe({OWN: "S", TALKER: "T"}, [prefix(OWN)], t + dt) == []
    assert watch.watching()  # it may resume any time: keep checking often


def test_a_traced_owner_counts_as_stopped() -> None:
    watch = FrozenWatch(own_pid=OWN)
    watch.observe({OWN: "S", TALKER: "t"}, [prefix(OWN)], 0.0)  # never discovered, but stopped
    watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], 1.0)
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], 1.0 + GRACE_S) == [TALKER]


def test_a_process_never_discovered_nor_stopped_is_left_alone() -> None:
    # e.g. a DDS participant that is not a ROS one, or a socket on a participant's port
    watch = FrozenWatch(own_pid=OWN)
    for t in (0.0, 5.0, 60.0):
        assert watch.observe({OWN: "S", 777: "S"}, [prefix(OWN)], t) == []
    assert not watch.watching()


def test_the_gateway_itself_and_gone_processes_are_never_due() -> None:
    watch = FrozenWatch(own_pid=OWN)
    watch.observe({OWN: "S", TALKER: "S"}, [prefix(TALKER)], 0.0)  # own prefix missing
    assert watch.observe({OWN: "S", TALKER: "Z"}, [], 10.0) == []


def test_at_most_one_rejoin_per_interval_and_once_per_pid() -> None:
    watch = FrozenWatch(own_pid=OWN, min_interval_s=10.0)
    t = frozen_then_resumed(watch)
    watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t)
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t + 2) == [TALKER]
    watch.rejoined([TALKER], t + 2, 1e9, 0.4)
    assert watch.rejoins == 1 and watch.health()["last_rejoin"] == "2001-09-09T01:46:40Z"
    # the rejoin did not bring it back: not again for the same process
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t + 30) == []
    assert not watch.watching()
    # another process resumes within the interval: it waits for the interval
    other = 5151
    watch.observe({OWN: "S", other: "S"}, [prefix(OWN), prefix(other)], t + 3)
    watch.observe({OWN: "S", other: "T"}, [prefix(OWN)], t + 4)
    watch.observe({OWN: "S", other: "S"}, [prefix(OWN)], t + 5)
    assert watch.observe({OWN: "S", other: "S"}, [prefix(OWN)], t + 8) == []
    assert watch.observe({OWN: "S", other: "S"}, [prefix(OWN)], t + 12) == [other]


def test_a_pid_seen_again_then_frozen_again_is_due_again() -> None:
    watch = FrozenWatch(own_pid=OWN, min_interval_s=1.0)
    t = frozen_then_resumed(watch)
    watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t)
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t + 2) == [TALKER]
    watch.rejoined([TALKER], t + 2, 0.0, 0.4)
    t = frozen_then_resumed(watch, t + 3)  # rediscovered by the new participant, frozen again
    watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t)
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t + 2) == [TALKER]


def test_disabled_never_rejoins() -> None:
    watch = FrozenWatch(enabled=False, own_pid=OWN)
    t = frozen_then_resumed(watch)
    watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t)
    assert watch.observe({OWN: "S", TALKER: "S"}, [prefix(OWN)], t + 10) == []
    assert watch.health()["rejoin_enabled"] is False


def test_a_returned_participant_missing_endpoints_past_the_grace_is_due_once() -> None:
    watch = FrozenWatch(own_pid=OWN, min_interval_s=5.0)
    p = prefix(TALKER)
    assert watch.observe_incomplete([p], 10.0) == []
    assert watch.watching()
    assert watch.observe_incomplete([p], 10.0 + INCOMPLETE_GRACE_S / 2) == []
    assert watch.observe_incomplete([p], 10.0 + INCOMPLETE_GRACE_S) == [p]
    watch.rejoined([], 12.0, 0.0, 0.3, prefixes=[p])
    assert watch.rejoins == 1
    # the rejoin did not complete it: not again for the same participant
    assert watch.observe_incomplete([p], 40.0) == []
    assert not watch.watching()
    # complete at some check, then incomplete again (another return): due again
    assert watch.observe_incomplete([], 41.0) == []
    assert watch.observe_incomplete([p], 42.0) == []
    assert watch.observe_incomplete([p], 42.0 + INCOMPLETE_GRACE_S) == [p]


def test_endpoints_arriving_within_the_grace_need_no_rejoin() -> None:
    watch = FrozenWatch(own_pid=OWN)
    p = prefix(TALKER)
    watch.observe_incomplete([p], 0.0)
    assert watch.observe_incomplete([], 0.5) == []
    # missing again later: the grace counts from then
    assert watch.observe_incomplete([p], INCOMPLETE_GRACE_S + 0.1) == []
    assert watch.incomplete_since == {p: INCOMPLETE_GRACE_S + 0.1}


def test_an_incomplete_participant_waits_for_the_interval_and_the_switch() -> None:
    watch = FrozenWatch(own_pid=OWN, min_interval_s=5.0)
    watch.rejoined([TALKER], 0.0, 0.0, 0.3)
    p = prefix(5151)
    watch.observe_incomplete([p], 1.0)
    assert watch.observe_incomplete([p], 4.0) == []  # 4 s after the last rejoin
    assert watch.observe_incomplete([p], 5.0) == [p]
    off = FrozenWatch(enabled=False, own_pid=OWN)
    off.observe_incomplete([p], 0.0)
    assert off.observe_incomplete([p], 10.0) == []
