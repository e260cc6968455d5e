"""Triggers and subscriptions of an entity that left discovery; undelivered one-shot events."""

from __future__ import annotations

import asyncio

from gateway.events import FAULTS, Event
from gateway.push.orphans import OrphanClock
from gateway.push.rules import subscription_create, trigger_create
from tests.push.test_push_engine import engine

CAM = ("apps", "cam")


def test_a_seen_entity_is_an_orphan_only_after_the_grace_period() -> None:
    clock = OrphanClock(5.0)
    here = {CAM}
    present = lambda k, i: (k, i) in here  # noqa: E731
    assert clock.orphans([CAM], present, 0.0) == set()
    here.clear()
    assert clock.orphans([CAM], present, 1.0) == set()  # missing since 1.0
    assert clock.orphans([CAM], present, 5.9) == set()
    assert clock.orphans([CAM], present, 6.0) == {CAM}
    assert clock.orphans([CAM], present, 7.0) == set()  # reported once


def test_an_entity_back_within_the_grace_period_keeps_its_owners() -> None:
    clock = OrphanClock(5.0)
    here = {CAM}
    present = lambda k, i: (k, i) in here  # noqa: E731
    clock.orphans([CAM], present, 0.0)
    here.clear()
    clock.orphans([CAM], present, 1.0)
    here.add(CAM)
    clock.orphans([CAM], present, 2.0)
    here.clear()
    assert clock.orphans([CAM], present, 6.5) == set()  # the clock restarted at 6.5
    assert clock.orphans([CAM], present, 11.5) == {CAM}


def test_a_never_seen_entity_is_never_an_orphan() -> None:
    clock = OrphanClock(0.0)
    assert clock.orphans([CAM], lambda k, i: False, 100.0) == set()


def test_engine_ends_triggers_and_subscriptions_of_a_vanished_entity() -> None:
    async def run() -> None:
        e = engine()
        e.orphans.grace_s = 2.0
        await e.start()
        try:
            trig = e.create_trigger(trigger_create(
                {"resource": "/api/v1/apps/cam/faults",
                 "trigger_condition": {"condition_type": "OnChange"}}, "apps", "cam"), {}, 0.0)
            other = e.create_trigger(trigger_create(
                {"resource": "/api/v1/apps/other/faults",
                 "trigger_condition": {"condition_type": "OnChange"}}, "apps", "other"), {}, 0.0)
            sub = e.create_subscription(subscription_create(
                {"resource": "/api/v1/apps/cam/faults", "interval": "fast"}, "apps", "cam",
                3600, {}), None, 0.0)
            e.sweep_orphans(10.0)
            del e.state.cache.entities.apps["cam"]
            e.sweep_orphans(11.0)
            assert trig.id in e.triggers and sub.id in e.subscriptions
            e.sweep_orphans(13.0)
            assert trig.id not in e.triggers and sub.id not in e.subscriptions
            assert other.id in e.triggers and e.orphaned == 2
        finally:
            await e.stop()

    asyncio.run(run())


def test_a_one_shot_firing_without_client_waits_for_the_next_client_once() -> None:
    async def run() -> None:
        e = engine()
        await e.start()
        try:
            trig = e.create_trigger(trigger_create(
                {"resource": "/api/v1/apps/cam/faults",
                 "trigger_condition": {"condition_type": "OnChange"}}, "apps", "cam"), {}, 0.0)
            e.state.events.publish(Event(FAULTS, "cam", "F1", "confirmed",
                                         {"fault_code": "F1", "status": "CONFIRMED"}))
            assert trig.id not in e.triggers  # one-shot: ended
            assert e.take_parked("apps", "other", trig.id, 1.0) is None  # other entity
            held = e.take_parked("apps", "cam", trig.id, 1.0)
            assert held is not None and len(held) == 1 and b'"fault_code":"F1"' in held[0]
            assert e.take_parked("apps", "cam", trig.id, 1.0) is None  # handed out once
        finally:
            await e.stop()

    asyncio.run(run())


def test_parked_events_are_bounded_and_a_deleted_trigger_parks_nothing() -> None:
    async def run() -> None:
        from gateway.push import engine as engine_mod

        e = engine()
        await e.start()
        try:
            body = {"resource": "/api/v1/apps/cam/faults",
                    "trigger_condition": {"condition_type": "OnChange"}}
            first = ""
            for n in range(engine_mod.PARKED_MAX + 5):
                made = e.create_trigger(trigger_create(body, "apps", "cam"), {}, 0.0)
                first = first or made.id
                e.state.events.publish(Event(FAULTS, "cam", f"F{n}", "confirmed",
                                             {"fault_code": f"F{n}"}))
            assert len(e.parked) == engine_mod.PARKED_MAX
            assert first not in e.parked  # the oldest went first
            multi = e.create_trigger(trigger_create({**body, "multishot": True}, "apps", "cam"),
                                     {}, 0.0)
            e.state.events.publish(Event(FAULTS, "cam", "G", "confirmed", {"fault_code": "G"}))
            assert multi.pending
            e.remove_trigger(multi)  # DELETE: the client asked for the end
            assert multi.id not in e.parked
        finally:
            await e.stop()

    asyncio.run(run())


def test_an_entity_seen_at_creation_only_is_still_an_orphan_once_gone() -> None:
    clock = OrphanClock(1.0)
    clock.saw(CAM)  # the owner was created while the entity existed
    assert clock.orphans([CAM], lambda k, i: False, 0.0) == set()
    assert clock.orphans([CAM], lambda k, i: False, 1.0) == {CAM}
