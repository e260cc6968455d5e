"""mDNS without credentials (gateway/federation/mdns_trust.py): a peer that answers stays put."""

from gateway.federation.mdns_trust import (
    ADD,
    GOODBYE_WINDOW_S,
    HOLD,
    REMOVE,
    REPOINT,
    MdnsTrust,
    refusal,
)

A, B = "http://192.168.1.10:8080", "http://192.168.1.66:8080"


def test_an_announcement_does_not_move_a_peer_that_answers() -> None:
    trust = MdnsTrust()
    assert trust.announced("r1", A, None, False) == ADD  # new
    assert trust.announced("r1", A, A, True) == ADD  # its own address again
    assert trust.announced("r1", B, A, True) == HOLD  # elsewhere while answering at A
    assert trust.offline("r1", now=10.0) == (REPOINT, B)  # ... moved once A stops answering
    assert trust.offline("r1", now=11.0) is None  # once


def test_a_peer_that_no_longer_answers_moves_at_once() -> None:
    assert MdnsTrust().announced("r1", B, A, False) == REPOINT  # restarted elsewhere


def test_its_own_announcement_cancels_a_held_move() -> None:
    trust = MdnsTrust()
    assert trust.announced("r1", B, A, True) == HOLD
    assert trust.announced("r1", A, A, True) == ADD  # the real peer answers for A
    assert trust.offline("r1", now=10.0) is None


def test_a_goodbye_removes_a_peer_only_once_it_stops_answering() -> None:
    trust = MdnsTrust()
    assert trust.goodbye("r1", online=False, now=0.0) == REMOVE
    assert trust.goodbye("r1", online=True, now=0.0) == HOLD
    assert trust.offline("r1", now=1.0) == (REMOVE, "")  # a true goodbye: it stopped


def test_a_goodbye_from_a_peer_that_keeps_answering_expires() -> None:
    trust = MdnsTrust()
    assert trust.goodbye("r1", online=True, now=0.0) == HOLD
    assert trust.offline("r1", now=GOODBYE_WINDOW_S + 1.0) is None  # a later outage: kept


def test_new_peers_are_capped_in_all_and_per_address() -> None:
    known = {f"f{i}": f"http://10.0.0.66:{8000 + i}" for i in range(3)}
    why = refusal("f9", "http://10.0.0.66:9000", known, max_peers=50, max_per_address=3)
    assert why is not None and "aggregation.max_discovered_per_address" in why
    assert "10.0.0.66" in why
    assert refusal("r1", A, known, max_peers=50, max_per_address=3) is None
    why = refusal("r1", A, known, max_peers=3, max_per_address=10)
    assert why is not None and "aggregation.max_discovered_peers" in why
    assert refusal("f0", "http://10.0.0.66:8000", known, 3, 3) is None  # itself not counted
