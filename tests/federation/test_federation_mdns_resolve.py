"""A peer's name that did not resolve in time is resolved again with backoff (the browser
never announces it again: its record is cached), within a bound on the names that wait
(gateway/federation/mdns.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from zeroconf import ServiceStateChange

from gateway.federation import mdns
from gateway.federation.mdns import Mdns
from gateway.federation.settings import MdnsOptions

SERVICE = "_diag-test._tcp.local."


class _Info:
    """AsyncServiceInfo that answers only after `fails[name]` failed requests."""

    fails: dict[str, int] = {}
    asked: dict[str, int] = {}

    def __init__(self, service: str, name: str) -> None:
        self.name = name
        self.port = 8080

    async def async_request(self, zc: Any, timeout_ms: int) -> bool:
        _Info.asked[self.name] = _Info.asked.get(self.name, 0) + 1
        return _Info.asked[self.name] > _Info.fails.get(self.name, 0)

    def parsed_addresses(self, version: Any) -> list[str]:
        return ["127.0.0.9"]


class _Zeroconf:
    zeroconf = None

    async def async_close(self) -> None:
        return None


async def _nothing(name: str) -> None:
    return None


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> tuple[Mdns, list[tuple[str, str]]]:
    monkeypatch.setattr(mdns, "AsyncServiceInfo", _Info)
    monkeypatch.setattr(mdns, "RESOLVE_RETRY_S", (0.01, 0.02))
    _Info.fails, _Info.asked = {}, {}
    found: list[tuple[str, str]] = []
    m = Mdns(MdnsOptions(discover=True, name="primary", service=SERVICE), "", 0,
             lambda name, url: found.append((name, url)), _nothing)
    m.azc = _Zeroconf()  # type: ignore[assignment]
    return m, found


async def _until(cond: Any, budget_s: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + budget_s
    while not cond():
        assert loop.time() < end, "condition not met in time"
        await asyncio.sleep(0.01)


def test_a_name_that_did_not_resolve_is_asked_again_until_it_does(
        browser: tuple[Mdns, list[tuple[str, str]]]) -> None:
    m, found = browser
    name = f"r7.{SERVICE}"
    _Info.fails[name] = 4  # fails four times: waits 0.01, 0.02, then 0.02 again (the last)

    async def run() -> None:
        m._on_change(None, SERVICE, name, ServiceStateChange.Added)
        await _until(lambda: found)
        await m.stop()

    asyncio.run(run())
    assert found == [("r7", "http://127.0.0.9:8080")]
    assert _Info.asked[name] == 5
    assert not m._unresolved


def test_a_name_removed_meanwhile_is_not_asked_again(
        browser: tuple[Mdns, list[tuple[str, str]]]) -> None:
    m, found = browser
    name = f"r8.{SERVICE}"
    _Info.fails[name] = 1000

    async def run() -> None:
        m._on_change(None, SERVICE, name, ServiceStateChange.Added)
        await _until(lambda: _Info.asked.get(name, 0) >= 2)
        m._on_change(None, SERVICE, name, ServiceStateChange.Removed)
        await _until(lambda: name not in m._unresolved)
        asked = _Info.asked[name]
        await asyncio.sleep(0.1)  # five retry waits: none comes
        assert _Info.asked[name] == asked
        await m.stop()

    asyncio.run(run())
    assert found == []


def test_names_waiting_to_be_resolved_again_are_bounded(
        browser: tuple[Mdns, list[tuple[str, str]]], monkeypatch: pytest.MonkeyPatch) -> None:
    m, found = browser
    monkeypatch.setattr(mdns, "MAX_UNRESOLVED", 3)
    monkeypatch.setattr(mdns, "RESOLVE_RETRY_S", (60.0,))
    names = [f"junk{k}.{SERVICE}" for k in range(10)]
    for name in names:
        _Info.fails[name] = 1000

    async def run() -> None:
        for name in names:
            m._on_change(None, SERVICE, name, ServiceStateChange.Added)
        await _until(lambda: all(n in _Info.asked for n in names))
        await asyncio.sleep(0)
        assert len(m._unresolved) == 3
        await m.stop()
        assert not m._unresolved

    asyncio.run(run())
    assert found == []
