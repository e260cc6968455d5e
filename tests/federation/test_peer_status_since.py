"""The /health peers block says since when a peer holds its status, and why it is offline."""

from __future__ import annotations

from typing import Any

from gateway.federation.peers import Peer, status_since


def _peer(added: float) -> Peer:
    client: Any = None
    return Peer("robot1", "http://127.0.0.1:1", False, client, added=added)


def test_offline_since_added_until_first_probe() -> None:
    peer = _peer(added=100.0)
    # wall 1_800_000_000.0 at monotonic 130.0: added 30 s ago
    out = status_since(peer, 1_800_000_000.0, 130.0)
    assert out == {"status_since": "2027-01-15T07:59:30.000Z"}


def test_since_follows_status_changes_and_names_the_reason() -> None:
    peer = _peer(added=0.0)
    peer.health.record(True, 10.0)
    assert status_since(peer, 1_800_000_000.0, 12.5)["status_since"] == \
        "2027-01-15T07:59:57.500Z"
    peer.health.record(False, 20.0, "unreachable")
    out = status_since(peer, 1_800_000_000.0, 21.0)
    assert out == {"status_since": "2027-01-15T07:59:59.000Z", "last_reason": "unreachable"}
