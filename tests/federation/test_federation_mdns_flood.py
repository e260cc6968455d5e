"""A flood of mDNS names that never prove (aggregation.fleet_secret) cannot keep a real robot
out: unproved candidates are bounded, a new announcement is asked at once in the place of an
older unproved one, and they expire (ProofGate in gateway/federation/mdns_trust.py, the browser in
gateway/federation/mdns.py)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from gateway.federation import mdns, mdns_trust
from gateway.federation.mdns import Mdns
from gateway.federation.mdns_trust import BUSY, CHECK, PASS, PROOF_EXPIRE_S, ProofGate
from gateway.federation.settings import Budgets, MdnsOptions

SECRET = "correct horse battery staple"
ROBOT = "http://192.168.1.10:8080"
SPOOFED = [f"http://10.0.0.{66 + a}" for a in range(4)] + ["http://192.168.1.10"]


def fake(i: int) -> tuple[str, str]:
    """The i-th spoofed (name, URL): five addresses, the real robot's among them."""
    return f"fake-{i}", f"{SPOOFED[i % len(SPOOFED)]}:{9000 + i}"


def test_a_flood_over_several_addresses_cannot_keep_a_proving_robot_out() -> None:
    gate = ProofGate(max_pending=8, max_per_address=3)
    running: dict[tuple[str, str], int] = {}  # challenge running -> tick it ends
    names = itertools.count()
    robot_at: int | None = None
    for tick in range(200):
        now = float(tick)
        for _ in range(5):  # 5 new names per tick; challenges to them take 3 ticks
            name, url = fake(next(names))
            assert gate.announced(name, url, now) == CHECK  # always asked at once
            running[(name, url)] = tick + 3
        if tick == 50:  # the robot appears, and answers its challenge within the tick
            assert gate.announced("r1", ROBOT, now) == CHECK
            running[("r1", ROBOT)] = tick
        for key, ends in list(running.items()):
            if ends != tick or not gate.asked(*key):
                continue
            if key[0] == "r1":
                gate.passed(*key)
                robot_at = tick
            else:
                running[key] = tick + 2  # asked again
                gate.failed(*key, now)
        for key in gate.take_dropped():
            running.pop(key, None)
        assert len(gate.pending) <= 8
        assert sum(1 for _, u in gate.pending if u.startswith(ROBOT[:-5])) <= 3
    assert robot_at == 50
    assert gate.announced("r1", ROBOT, 200.0) == PASS
    assert gate.evictions >= 5 * 200 - 8  # the flood's names gave their places up


def test_the_most_failing_then_the_oldest_candidate_gives_its_place_up() -> None:
    gate = ProofGate(max_pending=3, max_per_address=16)
    a, b, c = ("a", "http://10.0.0.1:1"), ("b", "http://10.0.0.2:1"), ("c", "http://10.0.0.3:1")
    for key in (a, b, c):
        assert gate.announced(*key, 0.0) == CHECK
    for _ in range(3):
        gate.failed(*a, 1.0)
    gate.failed(*b, 1.0)
    assert gate.announced("d", "http://10.0.0.4:1", 2.0) == CHECK
    assert gate.take_dropped() == [a]
    assert gate.announced("e", "http://10.0.0.5:1", 2.0) == CHECK
    assert gate.take_dropped() == [b]
    # c, d and e run their first challenges: the oldest of them gives its place up
    assert gate.announced("f", "http://10.0.0.6:1", 2.0) == CHECK
    assert gate.take_dropped() == [c]
    assert not gate.asked(*c) and gate.failed(*c, 3.0) is None  # no longer asked
    assert gate.announced("d", "http://10.0.0.4:1", 2.0) == BUSY


def test_unproved_candidates_expire() -> None:
    gate = ProofGate(max_pending=4, max_per_address=4)
    key = ("fake", "http://10.0.0.66:9000")
    assert gate.announced(*key, 0.0) == CHECK
    assert gate.failed(*key, 1.0) is not None
    assert gate.failed(*key, PROOF_EXPIRE_S + 1.0) is None  # asked no more
    assert not gate.asked(*key)
    assert gate.announced(*key, PROOF_EXPIRE_S + 2.0) == CHECK  # announced again: asked anew
    other = ("other", "http://10.0.0.67:9000")
    gate.announced(*other, 2 * PROOF_EXPIRE_S + 3.0)  # the stale one expires meanwhile
    assert gate.take_dropped() == [key] and list(gate.pending) == [other]


class Fleet:
    """Fake challenges: the fakes never prove (after a short wait), r1 proves at once."""

    def __init__(self) -> None:
        self.found: list[tuple[str, str]] = []
        self.asked = 0

    async def challenge(self, url: str, name: str, secret: str, budgets: Budgets,
                        vendor: str) -> str | None:
        self.asked += 1
        if name == "r1":
            return None
        await asyncio.sleep(0.005)
        return "no proof (unreachable)"

    def on_found(self, name: str, url: str) -> None:
        self.found.append((name, url))


async def nothing(name: str) -> None:
    return None


def test_the_browser_admits_a_robot_during_a_flood(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = Fleet()
    monkeypatch.setattr(mdns, "challenge", fleet.challenge)
    monkeypatch.setattr(mdns, "MAX_UNPROVED", 8)
    monkeypatch.setattr(mdns_trust, "PROOF_RETRY_MIN_S", 0.01)

    async def run() -> None:
        m = Mdns(MdnsOptions(discover=True, name="primary", fleet_secret=SECRET,
                             max_per_address=3), "", 0, fleet.on_found, nothing)
        names = itertools.count()
        try:
            for _ in range(50):  # 50 names over five addresses, the robot's among them
                name, url = fake(next(names))
                m._check(f"{name}._x.", name, url)
                await asyncio.sleep(0)
            m._check("r1._x.", "r1", ROBOT)
            for turn in range(2000):  # and again, with new ones, a few per loop turn
                for i in range(4):
                    name, url = fake(next(names) if i == 0 else (turn * 3 + i) % 50)
                    m._check(f"{name}._x.", name, url)
                assert len(m.gate.pending) <= 8 and len(m._proving) <= 8
                await asyncio.sleep(0)
                if ("r1", ROBOT) in fleet.found:
                    break
            assert fleet.found == [("r1", ROBOT)]
            assert m.gate.evictions > 40
        finally:
            await m.stop()
        assert not m._proving

    asyncio.run(run())
