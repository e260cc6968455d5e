"""A stopped peer gateway is seen offline, and back online once resumed (timing: bench/peer_liveness.py)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pair(domain: int, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[Gateway, Gateway]]:
    tmp: Path = tmp_path_factory.mktemp("liveness")
    peer = Gateway(free_port(), domain, [f"state_dir={tmp / 'peer'}"], tmp / "peer.log")
    primary = Gateway(free_port(), domain, [
        "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{peer.port}]",
        "aggregation.peer_names=[peer]", f"state_dir={tmp / 'primary'}"], tmp / "primary.log")
    with peer, primary:
        yield primary, peer


def peer_entry(primary: Gateway) -> dict[str, Any]:
    (entry,) = primary.get("/health").json()["peers"]
    return entry  # type: ignore[no-any-return]


def test_a_stopped_peer_goes_offline_and_comes_back_when_resumed(
        pair: tuple[Gateway, Gateway]) -> None:
    primary, peer = pair
    primary.wait_for("/health", lambda b: b["peers"][0]["status"] == "online", timeout=60)
    assert peer.proc is not None
    for _ in range(2):  # twice: the second stop meets a peer the primary saw come back
        os.kill(peer.proc.pid, signal.SIGSTOP)
        try:
            offline = primary.wait_for("/health", lambda b: b["peers"][0]["status"]
                                       == "offline", timeout=20)
        finally:
            os.kill(peer.proc.pid, signal.SIGCONT)
        assert offline["peers"][0]["x-vendor"]["last_reason"] == "timeout", offline
        primary.wait_for("/health", lambda b: b["peers"][0]["status"] == "online", timeout=20)
        assert "last_reason" not in peer_entry(primary)["x-vendor"]
        time.sleep(0.5)


def test_a_primary_with_a_peer_stops_cleanly(pair: tuple[Gateway, Gateway]) -> None:
    """A stop ends every peer's loop (one woken by its beacon's end as it is cancelled, too):
    the primary logs `stopped` rather than waiting for the hard exit or the harness's kill."""
    primary, _peer = pair
    primary.wait_for("/health", lambda b: b["peers"][0]["status"] == "online"
                     and b["peers"][0]["x-vendor"]["beacon"], timeout=60)
    primary.stop()
    assert primary.proc is not None and primary.proc.returncode == 0, primary.proc.returncode
    assert primary.log_path is not None
    assert "INFO gateway: stopped" in primary.log_path.read_text()
