"""The cyclic tick schedule (push/cadence.py) on a simulated clock."""

from __future__ import annotations

from gateway.push.cadence import CATCHUP_MAX_S, DeliveryCount, next_due

PERIOD = 0.05


def run(wakes: list[float], period: float = PERIOD) -> tuple[list[float], DeliveryCount]:
    """Drive the schedule: the timer for each due tick fires no earlier than the next
    possible loop turn in `wakes` (a starved loop: turns only at those times)."""
    count = DeliveryCount()
    due, skipped = period, 0
    sent: list[float] = []
    for now in wakes:
        if now < due:
            continue  # the loop turned before the tick was due: nothing to send
        sent.append(now)
        count.tick(1, skipped)
        due, skipped = next_due(due, period, now)
    return sent, count


def test_an_on_time_tick_keeps_the_grid() -> None:
    assert next_due(1.0, PERIOD, 1.0) == (1.0 + PERIOD, 0)
    assert next_due(1.0, PERIOD, 1.01) == (1.0 + PERIOD, 0)


def test_a_late_tick_is_followed_at_once_by_the_next_intervals_tick() -> None:
    # ran 3 intervals late: the next one is already due (no skipping to the next phase)
    due, skipped = next_due(1.0, PERIOD, 1.0 + 3 * PERIOD)
    assert (due, skipped) == (1.0 + PERIOD, 0)


def test_a_stall_past_the_catchup_limit_skips_and_counts_the_rest() -> None:
    now = 1.0 + 5.0  # a 5 s stall
    due, skipped = next_due(1.0, PERIOD, now)
    assert skipped > 0
    # what is left to make up is within the limit, and on the grid
    assert 0 <= now - due <= CATCHUP_MAX_S
    steps = (due - 1.0) / PERIOD
    assert abs(steps - round(steps)) < 1e-6
    assert round(steps) == 1 + skipped


def test_a_starved_loop_still_sends_one_frame_per_interval() -> None:
    # the loop turns every 30 ms, but each timer wake runs 60 ms late in bursts: 10 s
    wakes = [round(0.03 * k, 6) for k in range(1, 334)]
    late = [t for i, t in enumerate(wakes) if i % 4 != 1]  # every 4th turn lost: lumpy
    sent, count = run(late)
    due_intervals = int(late[-1] / PERIOD)
    assert count.share == 1.0
    assert due_intervals - 2 <= len(sent) <= due_intervals  # none lost, none doubled
    assert len(set(sent)) == len(sent)  # one frame per loop turn: never a queued burst


def test_a_loop_slower_than_the_interval_degrades_to_its_turn_rate() -> None:
    # a turn every 200 ms can carry only one frame each: a quarter of the 50 ms intervals
    wakes = [round(0.2 * k, 6) for k in range(1, 101)]  # 20 s
    sent, count = run(wakes)
    assert len(sent) == len(wakes)  # every turn sends the frame it owes
    assert 0.2 < count.share < 0.3
    assert count.due <= int(wakes[-1] / PERIOD)  # never more due than intervals passed


def test_the_share_counts_every_subscription_of_a_tick() -> None:
    count = DeliveryCount()
    assert count.share == 1.0  # nothing due yet
    count.tick(3, 0)
    count.tick(3, 1)  # each of the 3 also owed one skipped interval
    assert (count.due, count.delivered) == (9, 6)
    assert count.health() == {"intervals_due": 9, "frames_delivered": 6,
                              "delivered_share": round(6 / 9, 4)}
