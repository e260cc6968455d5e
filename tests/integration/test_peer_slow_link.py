"""A peer behind a slow link (answers in 1-2 s, more than the 0.8 s probe floor) joins and
stays online: its probe budget grows to what the link needs (gateway/federation/health.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.harness import ROOT, Gateway

pytestmark = pytest.mark.integration

RTT_MS = 1000  # a fresh connection's probe takes ~2 s (handshake + request), a kept one ~1 s


@pytest.fixture(scope="module")
def slow_pair(domain: int, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[tuple[Gateway, subprocess.Popen[bytes]]]:
    tmp: Path = tmp_path_factory.mktemp("slowlink")
    peer = Gateway(free_port(), domain, [f"state_dir={tmp / 'peer'}"], tmp / "peer.log")
    link_port = free_port()
    # beacon off: the peer is probed every interval, so every probe crosses the slow link
    primary = Gateway(free_port(), domain, [
        "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{link_port}]",
        "aggregation.peer_names=[far]", "aggregation.beacon=false",
        f"state_dir={tmp / 'primary'}"], tmp / "primary.log")
    with peer:
        with open(tmp / "link.log", "wb") as out:
            link = subprocess.Popen(
                [sys.executable, "-m", "tests.fleet.linkemu", "--listen",
                 f"127.0.0.1:{link_port}", "--target", f"127.0.0.1:{peer.port}",
                 "--control", str(tmp / "link.sock"), "--rtt-ms", str(RTT_MS)],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            with primary:
                yield primary, link
        finally:
            link.terminate()
            link.wait(10)


def far_status(primary: Gateway) -> str:
    (entry,) = primary.get("/health").json()["peers"]
    return entry["status"]  # type: ignore[no-any-return]


def test_a_peer_behind_a_slow_link_joins_and_stays_online(
        slow_pair: tuple[Gateway, subprocess.Popen[bytes]]) -> None:
    primary, link = slow_pair
    assert link.poll() is None, "the link emulator exited"
    # with a fixed 0.8 s budget every probe times out and the peer never joins
    primary.wait_for("/health", lambda b: b["peers"][0]["status"] == "online", timeout=60)
    # online, each probe (every 0.5 s) takes a round trip of ~1 s: a budget that fell back
    # to 0.8 s would mark the peer offline at the next probe
    seen = []
    deadline = time.monotonic() + 8.0
    while time.monotonic() < deadline:
        seen.append(far_status(primary))
        time.sleep(0.2)
    assert set(seen) == {"online"}, seen
    stats = primary.get("/health").json()["peers"][0]
    assert "last_reason" not in stats["x-vendor"], stats
