"""Fleets that degrade, never vanish: repeated names across sites, online state from one peer
state, mDNS starts retried, robots held offline after their tunnel closed (pure parts and the
peer table)."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway.federation.combine import PeerAnswer, combine
from gateway.federation.fleet import PeerSet, merge
from gateway.federation.items import ItemError, data_item, topic_of
from gateway.federation.mdns import START_BACKOFF_S, injected_failures, keep_starting, start_delay
from gateway.federation.peer_auth import PeerAuth
from gateway.federation.peers import PeerTable
from gateway.federation.settings import FederationSettings
from gateway.model.entities import Entity, EntitySet

XV = "x-vendor"
TEMP = "/powertrain/engine/temperature"


def data(item_id: str, *members: str) -> dict:
    return {"id": item_id, "name": TEMP, "category": "currentData",
            XV: {"ros2": {"direction": "publish", "topic": TEMP, "type": "T"},
                 "member_ids": list(members)}}


def test_a_site_qualified_data_id_is_a_valid_peer_item() -> None:
    assert topic_of(f"robot1__temp_sensor:{TEMP}") == TEMP
    assert topic_of(TEMP) == TEMP
    assert data_item(data(f"robot1__temp_sensor:{TEMP}", "robot1__temp_sensor"), XV)["id"] \
        == f"robot1__temp_sensor:{TEMP}"
    for bad in ("temperature", "robot1:temperature", f":{TEMP}"):
        with pytest.raises(ItemError):
            data_item(data(bad, "x"), XV)


def test_two_sites_with_the_same_robot_names_keep_every_item() -> None:
    # each site qualified its items (its own temp_sensor and its robot1's); the top renames
    # both sites' colliding apps
    renames = {(site, app): f"{site}__{app}" for site in ("site1", "site2")
               for app in ("temp_sensor", "robot1__temp_sensor")}

    def rename(gateway: str, app_id: str) -> str:
        return renames.get((gateway, app_id), app_id)

    def site(_name: str) -> list[dict]:
        return [data(f"temp_sensor:{TEMP}", "temp_sensor"),
                data(f"robot1__temp_sensor:{TEMP}", "robot1__temp_sensor")]

    answers = [PeerAnswer(s, items=site(s)) for s in ("site1", "site2")]
    out = combine("data", XV, [data(TEMP, "temp_sensor")], answers, rename)
    assert [i["id"] for i in out.items] == [
        f"temp_sensor:{TEMP}", f"site1__temp_sensor:{TEMP}",
        f"site1__robot1__temp_sensor:{TEMP}", f"site2__temp_sensor:{TEMP}",
        f"site2__robot1__temp_sensor:{TEMP}"]
    assert [i[XV]["member_ids"] for i in out.items][1:] == [
        ["site1__temp_sensor"], ["site1__robot1__temp_sensor"], ["site2__temp_sensor"],
        ["site2__robot1__temp_sensor"]]
    assert "peer_dropped_items" not in out.extra and "partial" not in out.extra


def test_an_offline_peers_apps_are_offline_and_unavailable_alike() -> None:
    def robot() -> EntitySet:
        es = EntitySet()
        es.apps["temp_sensor"] = Entity("apps", "temp_sensor", "temp_sensor")
        es.apps["stopped"] = Entity("apps", "stopped", "stopped", is_online=False)
        return es

    view = merge(EntitySet(), [PeerSet("r1", robot(), online=False),
                               PeerSet("r2", robot(), online=True)], 1)
    for app in view.entities.apps.values():
        online = app.is_online
        available = view.available("apps", app.id)
        assert not (online and not available), app.id
    assert not view.entities.apps["r1__temp_sensor"].is_online
    assert not view.available("apps", "r1__temp_sensor")
    assert view.entities.apps["r2__temp_sensor"].is_online
    assert not view.entities.apps["r2__stopped"].is_online  # as its gateway says
    assert view.available("apps", "r2__stopped")


def test_start_delays_grow_and_stay_bounded() -> None:
    delays = [start_delay(n) for n in range(1, 20)]
    assert delays == sorted(delays)
    assert max(delays) == START_BACKOFF_S[-1]
    assert injected_failures({}) == 0
    assert injected_failures({"DIAG_GATEWAY_TEST_MDNS_START_FAILURES": "3"}) == 0
    assert injected_failures({"DIAG_GATEWAY_TEST_HOOKS": "1",
                              "DIAG_GATEWAY_TEST_MDNS_START_FAILURES": "3"}) == 3
    assert injected_failures({"DIAG_GATEWAY_TEST_HOOKS": "1",
                              "DIAG_GATEWAY_TEST_MDNS_START_FAILURES": "always"}) > 1000


def test_a_failing_start_is_retried_with_backoff_until_it_succeeds() -> None:
    attempts: list[int] = []
    undone: list[int] = []
    waits: list[float] = []

    async def attempt() -> None:
        attempts.append(1)
        if len(attempts) <= 4:
            raise OSError("zeroconf did not start")

    async def undo() -> None:
        undone.append(1)
        raise RuntimeError("leftovers that fail to close do not stop the retries")

    async def sleep(s: float) -> None:
        waits.append(s)

    failures = asyncio.run(keep_starting(attempt, undo, "mDNS", sleep))
    assert failures == 4 and len(attempts) == 5 and len(undone) == 4
    assert waits == [start_delay(n) for n in range(1, 5)]


def test_a_start_is_cancelled_cleanly() -> None:
    async def run() -> None:
        async def attempt() -> None:
            raise OSError("never")

        async def undo() -> None:
            return None

        task = asyncio.create_task(keep_starting(attempt, undo, "mDNS"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())


def _table(changes: list[int]) -> PeerTable:
    return PeerTable(FederationSettings(enabled=True), PeerAuth(False, "", False), "vendor",
                     lambda: changes.append(1))


def test_a_held_peer_stays_listed_offline_and_expires() -> None:
    async def run() -> None:
        changes: list[int] = []
        table = _table(changes)
        peer = table.add("robot1", "http://127.0.0.1:9", discovered=False)
        peer.entities = EntitySet()
        peer.health.online = True
        held = await table.hold("robot1", time.monotonic() + 0.3, "robot")
        assert held is peer and table.held("robot1") is peer
        assert not peer.online and peer.health.last_reason == "unreachable"
        assert [p.name for p in table.sets()] == ["robot1"]  # its last set stays
        (entry,) = table.health()
        assert entry["status"] == "offline"
        assert entry[XV]["tunnel"] == "closed" and entry[XV]["held_until"].endswith("Z")
        deadline = time.monotonic() + 10
        while "robot1" in table.peers and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert "robot1" not in table.peers and changes
        await table.close()

    asyncio.run(run())


def test_a_held_peer_re_added_keeps_its_set_and_is_no_longer_held() -> None:
    async def run() -> None:
        table = _table([])
        peer = table.add("robot1", "http://127.0.0.1:9", discovered=False)
        peer.entities, peer.etag = EntitySet(), '"e1"'
        await table.hold("robot1", time.monotonic() + 60)
        again = table.add("robot1", "http://127.0.0.1:10", discovered=False)
        assert again is not peer and table.held("robot1") is None
        assert again.entities is peer.entities and again.etag == '"e1"'
        # a cap on held peers: holding another drops the one expiring first
        for name, url in (("a", "http://127.0.0.1:11"), ("b", "http://127.0.0.1:12")):
            table.add(name, url, discovered=False).entities = EntitySet()
        await table.hold("a", time.monotonic() + 30, cap=1)
        await table.hold("b", time.monotonic() + 60, cap=1)
        assert "a" not in table.peers and table.held("b") is not None
        await table.close()

    asyncio.run(run())
