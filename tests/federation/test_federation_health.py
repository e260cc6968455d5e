"""Peer liveness: offline at a timeout or two soft failures, back at the first success (pure)."""

from __future__ import annotations

import pytest

from gateway.federation.health import (
    BACKOFF_S,
    PROBE_BUDGET_MAX_S,
    PROBE_BUDGET_S,
    RETRY_S,
    PeerHealth,
)


def test_a_new_peer_is_offline_until_its_first_probe_passes() -> None:
    h = PeerHealth()
    assert h.status == "offline" and not h.probed
    assert h.record(True, now=1.0) is True
    assert h.status == "online" and h.since == 1.0 and h.last_ok == 1.0


def test_one_soft_failure_is_retried_two_mark_the_peer_offline() -> None:
    h = PeerHealth()
    h.record(True, 0.0)
    assert h.record(False, 1.0, "canceled") is False
    assert h.online and h.delay(0.5) == RETRY_S
    assert h.record(False, 1.2, "too-large") is True
    assert not h.online and h.since == 1.2 and h.last_reason == "too-large"


def test_a_probe_unanswered_within_its_budget_is_offline_at_once() -> None:
    # a stopped peer: offline after the interval and one probe budget, not two
    h = PeerHealth()
    h.record(True, 0.0)
    assert h.record(False, 0.5 + PROBE_BUDGET_S, "timeout") is True
    assert not h.online and h.last_reason == "timeout"
    assert PROBE_BUDGET_S + 0.5 < 1.5  # the default interval: offline within 1.5 s


def test_a_hung_peer_always_has_a_probe_in_flight() -> None:
    # each probe of a hung peer waits its budget; the next goes at once, so a resumed peer
    # answers the one in flight (a refused connection backs off instead)
    h = PeerHealth()
    h.record(True, 0.0)
    for k in range(5):
        h.record(False, 1.0 + k, "timeout")
        assert h.delay(0.5) == 0.0
    h.record(False, 9.0, "unreachable")
    assert h.delay(0.5) == BACKOFF_S[-1]
    assert h.record(True, 10.0) is True and h.online


def test_a_refused_connection_or_error_status_is_offline_at_once() -> None:
    for reason in ("unreachable", "error-status"):
        h = PeerHealth()
        h.record(True, 0.0)
        assert h.record(False, 0.5, reason) is True and not h.online


def test_backoff_while_offline_and_recovery_on_first_success() -> None:
    h = PeerHealth()
    h.record(True, 0.0)
    delays = []
    for k in range(7):
        h.record(False, float(k), "unreachable")
        delays.append(h.delay(0.5))
    assert delays[:4] == list(BACKOFF_S) and delays[-1] == BACKOFF_S[-1]
    assert max(delays) <= 2.0  # a recovered peer is probed again within 2 s
    assert h.record(True, 10.0) is True and h.online and h.failures == 0
    assert h.delay(0.5) == 0.5


def test_a_never_seen_peer_is_probed_quickly() -> None:
    h = PeerHealth()
    assert h.delay(0.5) == BACKOFF_S[0]
    h.record(False, 0.0, "unreachable")
    assert h.record(False, 0.3, "unreachable") is False  # still offline: no change


def test_a_never_reached_peer_is_probed_again_within_2_s_whatever_failed() -> None:
    for reason in ("unreachable", "error-status", "invalid-response", "canceled", "too-large"):
        h = PeerHealth()
        for k in range(12):
            h.record(False, float(k), reason)
            assert h.delay(0.5) <= 2.0, (reason, k)


def test_a_never_reached_peer_gets_twice_the_budget_after_each_timeout() -> None:
    # a robot far away or starting on a busy machine answers in more than 0.8 s
    h = PeerHealth()
    budgets = []
    for k in range(6):
        budgets.append(h.budget(PROBE_BUDGET_S))
        h.record(False, float(k), "timeout")
        assert h.delay(0.5) == 0.0  # the next probe goes at once
    assert budgets == [0.8, 1.6, 3.2, PROBE_BUDGET_MAX_S, PROBE_BUDGET_MAX_S,
                       PROBE_BUDGET_MAX_S]
    h.measure(2.0)
    assert h.record(True, 10.0) is True
    assert h.budget(PROBE_BUDGET_S) == PROBE_BUDGET_MAX_S  # the measured link now


def test_a_peer_on_a_lan_keeps_the_floor_so_a_stopped_one_is_offline_within_1_5_s() -> None:
    h = PeerHealth()
    for k in range(20):
        h.measure(0.002 + 0.003 * (k % 3))
        h.record(True, float(k))
    assert h.budget(PROBE_BUDGET_S) == PROBE_BUDGET_S
    assert h.budget(0.3) == 0.3  # aggregation.timeout_ms below 800 ms still bounds it
    assert h.record(False, 20.0 + 0.5 + h.budget(PROBE_BUDGET_S), "timeout") is True
    # offline again: the link is known, so no growth (a healed partition is seen soon)
    h.record(False, 22.0, "timeout")
    assert h.budget(PROBE_BUDGET_S) == PROBE_BUDGET_S


def test_a_slow_link_raises_the_budget_to_what_it_needs() -> None:
    h = PeerHealth()
    for k in range(20):  # answers take 0.9-1.1 s (a far robot, a loaded machine)
        h.measure(1.0 + 0.1 * (-1) ** k)
        h.record(True, float(k))
    budget = h.budget(PROBE_BUDGET_S)
    assert 2.0 <= budget <= PROBE_BUDGET_MAX_S
    for _ in range(20):  # the link got fast again: back to the floor
        h.measure(0.01)
    assert h.budget(PROBE_BUDGET_S) == PROBE_BUDGET_S


def test_a_burst_of_peer_changes_merges_at_most_a_share_of_the_time() -> None:
    from gateway.federation.health import MERGE_DUTY, merge_delay

    assert merge_delay(now=10.0, last_end=float("-inf"), last_cost=0.0) == 0.0
    # a merge of 20 ms ended at 10.0: the next waits until merges took MERGE_DUTY of the time
    wait = merge_delay(now=10.0, last_end=10.0, last_cost=0.02)
    assert wait == pytest.approx(0.02 / MERGE_DUTY - 0.02)
    assert merge_delay(now=10.0 + wait, last_end=10.0, last_cost=0.02) == 0.0
    assert merge_delay(now=10.001, last_end=10.0, last_cost=0.0001) == 0.0  # small fleets: now
