"""Mixed entities on a primary: relayed peer events into the one stream, relink back-off."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from gateway.federation.fleet import FleetView, PeerSet, merge
from gateway.federation.push_links import (
    COPY_LEASE_S,
    RELINK_MAX_S,
    RELINK_S,
    Link,
    copy_body,
    copy_targets,
    mixed_peers,
    relink_delay,
)
from gateway.model.entities import Entity, EntitySet
from gateway.model.resource_uris import parse_resource
from gateway.push.rules import subscription_create, trigger_create
from tests.push.test_push_engine import engine


def test_relink_delay_doubles_per_failure_up_to_the_cap() -> None:
    assert relink_delay(0) == RELINK_S and relink_delay(1) == RELINK_S
    assert relink_delay(2) == 2 * RELINK_S and relink_delay(3) == 4 * RELINK_S
    assert relink_delay(50) == RELINK_MAX_S


def test_trigger_copies_are_leased_and_never_persistent() -> None:
    body = {"resource": "/api/v1/areas/a/faults", "persistent": True, "lifetime": 9999,
            "trigger_condition": {"condition_type": "OnChange"}}
    copy = copy_body("triggers", body)
    assert copy["persistent"] is False and copy["lifetime"] == COPY_LEASE_S
    assert body["persistent"] is True  # the owner's body is untouched
    sub = {"resource": "/api/v1/functions/f/faults", "interval": "fast", "duration": 30}
    assert copy_body("cyclic-subscriptions", sub) == sub
    assert Link("robot", "/areas/a/triggers/trig_4").leased
    assert not Link("robot", "/functions/f/cyclic-subscriptions/sub_2").leased


def _set(*entities: Entity) -> EntitySet:
    out = EntitySet()
    for e in entities:
        out.of(e.kind)[e.id] = e
    return out


def test_mixed_peers_cover_shared_entities_not_local_or_peer_owned_ones() -> None:
    fn = Entity("functions", "nav", "nav")
    local = _set(Entity("functions", "mine", "mine"), fn)
    peers = [PeerSet("r1", _set(Entity("functions", "nav", "nav"),
                                Entity("functions", "fleet", "fleet"),
                                Entity("functions", "solo", "solo"))),
             PeerSet("r2", _set(Entity("functions", "fleet", "fleet")))]
    view = merge(local, peers, 1)
    assert [o.gateway for o in mixed_peers(view, "functions", "nav")] == ["r1"]
    assert [o.gateway for o in mixed_peers(view, "functions", "fleet")] == ["r1", "r2"]
    assert mixed_peers(view, "functions", "mine") == []
    assert mixed_peers(view, "functions", "solo") == []  # forwarded to r1 instead


def _twins() -> FleetView:
    """This gateway and robots r1, r2 each run `temp_sensor` under the function `pt`."""
    def robot() -> EntitySet:
        return _set(Entity("apps", "temp_sensor", "temp_sensor", node_fqn="/t"),
                    Entity("functions", "pt", "pt", hosts=["temp_sensor"]))
    return merge(robot(), [PeerSet("r1", robot()), PeerSet("r2", robot())], 1)


def test_copies_go_to_every_contributing_peer_in_its_own_ids() -> None:
    view = _twins()
    ref = parse_resource("/api/v1/functions/pt/data/powertrain/engine/temperature")
    got = [(t.peer, t.entity_path, t.resource) for t in copy_targets(view, "functions", "pt",
                                                                      ref)]
    res = "/api/v1/functions/pt/data/powertrain/engine/temperature"
    assert got == [("r1", "/functions/pt", res), ("r2", "/functions/pt", res)]


def test_a_member_qualified_item_is_copied_to_that_members_peer_on_its_app() -> None:
    view = _twins()
    ref = parse_resource("/api/v1/functions/pt/data/r2__temp_sensor%3A%2Fpowertrain%2Ftemp")
    [target] = copy_targets(view, "functions", "pt", ref)
    assert (target.peer, target.entity_path, target.resource) == (
        "r2", "/apps/temp_sensor", "/api/v1/apps/temp_sensor/data/powertrain/temp")
    # a local member is sampled here: no copy anywhere
    local = parse_resource("/api/v1/functions/pt/data/temp_sensor:/powertrain/temp")
    assert copy_targets(view, "functions", "pt", local) == []


def test_a_peer_owned_app_answered_here_is_copied_to_its_owner() -> None:
    view = _twins()
    ref = parse_resource("/api/v1/apps/r1__temp_sensor/data/powertrain/temp")
    [target] = copy_targets(view, "apps", "r1__temp_sensor", ref)
    assert (target.peer, target.entity_path, target.resource) == (
        "r1", "/apps/temp_sensor", "/api/v1/apps/temp_sensor/data/powertrain/temp")
    assert copy_targets(view, "apps", "temp_sensor", parse_resource(
        "/api/v1/apps/temp_sensor/data/powertrain/temp")) == []  # this gateway's own


def _trigger_body(multishot: bool) -> dict[str, object]:
    return {"resource": "/api/v1/components/host/faults", "multishot": multishot,
            "trigger_condition": {"condition_type": "OnChange"}}


def test_a_relayed_firing_fires_the_trigger_and_a_one_shot_ends() -> None:
    async def run() -> None:
        e = engine()
        e.state.xv = "x-vendor"  # type: ignore[attr-defined]
        await e.start()
        try:
            multi = e.create_trigger(trigger_create(_trigger_body(True), "components", "host"),
                                     {}, 0.0)
            once = e.create_trigger(trigger_create(_trigger_body(False), "components", "host"),
                                    {}, 0.0)
            link = SimpleNamespace(latest=None, has_latest=False, peer="robot7")
            event = {"timestamp": "2026-01-01T00:00:00.000Z", "payload": {"fault_code": "P1"}}
            e.relayed(multi, link, event)
            e.relayed(multi, link, event)  # the peer evaluated its condition already
            assert multi.fired == 2 and len(multi.pending) == 2
            assert b'"fault_code":"P1"' in multi.pending[0]
            assert b'"x-vendor":{"peer":"robot7"}' in multi.pending[0]
            e.relayed(once, link, event)
            assert once.id not in e.triggers and once.id in e.parked
            e.relayed(once, link, event)  # late events of an ended trigger are ignored
            assert once.fired == 1
        finally:
            await e.stop()

    asyncio.run(run())


def test_a_relayed_subscription_frame_keeps_the_peer_items() -> None:
    async def run() -> None:
        e = engine()
        e.state.xv = "x-vendor"  # type: ignore[attr-defined]
        await e.start()
        try:
            sub = e.create_subscription(subscription_create(
                {"resource": "/api/v1/components/host/faults", "interval": "fast"},
                "components", "host", 3600, {}), None, 0.0)
            link = SimpleNamespace(latest=None, has_latest=False, peer="robot7")
            e.relayed(sub, link, {"timestamp": "t", "payload": {"id": "faults",
                                                                "data": [{"fault_code": "X"}]}})
            marked = [{"fault_code": "X", "x-vendor": {"peer": "robot7"}}]
            assert link.has_latest and link.latest["data"] == marked
            e.relayed(sub, link, {"timestamp": "t"})  # no payload: kept as it was
            assert link.latest["data"] == marked
        finally:
            await e.stop()

    asyncio.run(run())


def test_a_failed_peer_leaves_an_error_event_for_the_client() -> None:
    async def run() -> None:
        e = engine()
        e.state.vendor = "vendor"  # type: ignore[attr-defined]
        await e.start()
        try:
            trig = e.create_trigger(trigger_create(_trigger_body(True), "components", "host"),
                                    {}, 0.0)
            e.peer_failed(trig, "robot7", "its health check failed")
            raw = trig.pending[-1]
            assert raw.startswith(b"event: error\n")
            assert b'"vendor_code":"x-vendor-peer-unavailable"' in raw
            assert b'"parameters":{"peer":"robot7"}' in raw
            assert trig.id in e.triggers  # the local members go on
        finally:
            await e.stop()

    asyncio.run(run())
