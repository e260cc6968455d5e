"""The graph poll period of a ready gateway: the idle period once nothing changed for a while."""

from gateway.discovery.poller import IDLE_AFTER_S, poll_delay


def test_polls_at_the_interval_while_the_graph_changes() -> None:
    assert poll_delay(0.2, 1.0, 0.0, False) == 0.2
    assert poll_delay(0.2, 1.0, IDLE_AFTER_S - 0.1, False) == 0.2


def test_idle_graph_polled_at_the_idle_period() -> None:
    assert poll_delay(0.2, 1.0, IDLE_AFTER_S, False) == 1.0


def test_a_pending_change_keeps_the_interval() -> None:
    assert poll_delay(0.2, 1.0, IDLE_AFTER_S + 5, True) == 0.2


def test_idle_period_never_shortens_the_interval_and_zero_turns_it_off() -> None:
    assert poll_delay(2.0, 1.0, IDLE_AFTER_S + 5, False) == 2.0
    assert poll_delay(0.2, 0.0, IDLE_AFTER_S + 5, False) == 0.2
