"""The mDNS browser with aggregation.fleet_secret (gateway/federation/mdns.py): a peer is reported
found only once it proved the secret at its announced address; challenges are faked."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from gateway.federation import mdns, mdns_trust
from gateway.federation.mdns import Mdns
from gateway.federation.settings import Budgets, MdnsOptions

SECRET = "correct horse battery staple"
A, B = "http://192.168.1.10:8080", "http://192.168.1.66:8080"
FULL = "r1._diag-gateway._tcp.local."
WAIT_S = 10.0


class Peers:
    """Fake challenge answers by URL (None: proved) and the peers reported found."""

    def __init__(self, answers: dict[str, list[str | None]]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self.found: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    async def challenge(self, url: str, name: str, secret: str, budgets: Budgets,
                        vendor: str) -> str | None:
        assert secret == SECRET and name == "r1"
        self.asked.append(url)
        self.changed.set()
        left = self.answers[url]
        return left.pop(0) if len(left) > 1 else left[0]

    def on_found(self, name: str, url: str) -> None:
        self.found.append((name, url))
        self.changed.set()

    async def until(self, check: Callable[[], object]) -> None:
        async def wait() -> None:
            while not check():
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(wait(), WAIT_S)


async def nothing(name: str) -> None:
    return None


def browser(peers: Peers, monkeypatch: pytest.MonkeyPatch) -> Mdns:
    monkeypatch.setattr(mdns, "challenge", peers.challenge)
    monkeypatch.setattr(mdns_trust, "PROOF_RETRY_MIN_S", 0.01)
    return Mdns(MdnsOptions(discover=True, name="primary", fleet_secret=SECRET), "", 0,
                peers.on_found, nothing)


def test_a_peer_is_found_once_it_proved_and_warned_about_once(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    peers = Peers({A: ["no proof (unreachable)", "no proof (status 404)", None]})

    async def run() -> None:
        m = browser(peers, monkeypatch)
        m._check(FULL, "r1", A)
        m._check(FULL, "r1", A)  # announced again while asked: one challenge at a time
        await peers.until(lambda: peers.found)
        assert peers.found == [("r1", A)] and peers.asked == [A, A, A]
        m._check(FULL, "r1", A)  # proved there: no new challenge
        assert peers.found == [("r1", A), ("r1", A)] and len(peers.asked) == 3
        await m.stop()

    with caplog.at_level(logging.INFO, logger="gateway.federation.mdns"):
        asyncio.run(run())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"mDNS: r1 at {A} not added: no proof (unreachable); asked again "
                        "with backoff"]


def test_a_new_address_of_a_proved_peer_must_prove_itself(
        monkeypatch: pytest.MonkeyPatch) -> None:
    peers = Peers({A: [None], B: ["wrong proof"]})

    async def run() -> None:
        m = browser(peers, monkeypatch)
        m._check(FULL, "r1", A)
        await peers.until(lambda: peers.found)
        m._check(FULL, "r1", B)  # a spoofer's announcement of r1 elsewhere
        await peers.until(lambda: peers.asked.count(B) >= 3)  # asked again, never found
        assert peers.found == [("r1", A)]
        await m.stop()
        assert not m._proving

    asyncio.run(run())

