"""The push engine on the bus: lock expiry, update and fault triggers, the SSE hub's drops."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.events import FAULTS, LOCKS, UPDATES, Event, EventBus
from gateway.faults.hooks import FaultHooks
from gateway.faults.model import FaultRecord
from gateway.faults.stream import SseSlots
from gateway.faults.wire import FAULTS as FAULT_WIRE
from gateway.logs.configs import LogConfigurations
from gateway.model.entities import Entity, EntitySet
from gateway.push.cyclic import CyclicSampler
from gateway.push.engine import PushEngine
from gateway.push.rules import subscription_create, trigger_create
from gateway.push.sse import Channel, Client, SseHub
from gateway.push.topics import TopicWatch
from gateway.settings.config import load


class _Cache:
    def __init__(self) -> None:
        es = EntitySet()
        es.apps["cam"] = Entity("apps", "cam", "cam", node_fqn="/cam")
        es.apps["other"] = Entity("apps", "other", "other", node_fqn="/other")
        es.components["host"] = Entity("components", "host", "host", hosts=["cam"])
        self.entities = es


class _State:
    def __init__(self) -> None:
        self.settings = load(None, ["sse.max_subscriptions=10", "sse.max_duration_sec=3600"])
        self.events = EventBus()
        self.cache = _Cache()
        self.rosout = None
        self.aggregation = None
        self.pool = None


class _FaultService:
    """What push delivery reads of the fault manager: its store, faults and shapes."""

    def __init__(self, state: Any) -> None:
        self.state, self.store = state, None
        self.faults: list[FaultRecord] = []
        self.hooks = FaultHooks()
        self.wire: Any = None

    def select(self, statuses: Any, sources: list[str]) -> list[FaultRecord]:
        return [f for f in self.faults if set(f.sources) & set(sources)]


def engine() -> PushEngine:
    state = _State()
    hub = SseHub(SseSlots(10), 4, 30.0)
    delivery: Any = SimpleNamespace(faults=_FaultService(state), collections={},
                                    log_configs=LogConfigurations())
    return PushEngine(state, hub, TopicWatch(state), delivery)


def test_expired_lock_ends_the_entity_subscriptions() -> None:
    async def run() -> None:
        e = engine()
        await e.start()
        try:
            mine = subscription_create({"resource": "/api/v1/apps/cam/faults", "interval": "fast"},
                                       "apps", "cam", 3600, {})
            other = subscription_create({"resource": "/api/v1/apps/other/faults",
                                         "interval": "fast"}, "apps", "other", 3600, {})
            a = e.create_subscription(mine, "client-a", 0.0)
            b = e.create_subscription(other, "client-a", 0.0)
            bus = e.state.events
            # a lock whose scopes leave out cyclic-subscriptions ends nothing
            bus.publish(Event(LOCKS, "cam", "lock_1", "expired", {
                "lock_id": "lock_1", "client_id": "client-a", "entity_type": "app",
                "entity_id": "cam", "scopes": ["data"]}))
            assert a.id in e.subscriptions
            bus.publish(Event(LOCKS, "cam", "lock_2", "expired", {
                "lock_id": "lock_2", "client_id": "client-a", "entity_type": "apps",
                "entity_id": "cam"}))
            assert a.id not in e.subscriptions and b.id in e.subscriptions
        finally:
            await e.stop()

    asyncio.run(run())


def test_update_and_member_fault_events_fire_triggers() -> None:
    async def run() -> None:
        e = engine()
        await e.start()
        try:
            upd = trigger_create({"resource": "/api/v1/apps/cam/updates", "path": "/status",
                                  "trigger_condition": {"condition_type": "OnChangeTo",
                                                        "target_value": "completed"},
                                  "multishot": True}, "apps", "cam")
            t_upd = e.create_trigger(upd, {}, 0.0)
            flt = trigger_create({"resource": "/api/v1/components/host/faults",
                                  "trigger_condition": {"condition_type": "OnChange"},
                                  "path": "/fault_code", "multishot": True},
                                 "components", "host")
            t_flt = e.create_trigger(flt, {}, 0.0)
            bus = e.state.events
            for status in ("inProgress", "completed", "completed"):
                bus.publish(Event(UPDATES, "pkg1", "pkg1", "status", {"status": status}))
            assert t_upd.fired == 1 and len(t_upd.pending) == 1
            bus.publish(Event(FAULTS, "other", "F0", "created", {"fault_code": "F0"}))
            bus.publish(Event(FAULTS, "cam", "F1", "created", {"fault_code": "F1"}))
            assert t_flt.fired == 1  # the component sees its app's fault, not another app's
            assert e.observes(FAULTS) and e.observes(UPDATES) and not e.observes("logs")
            e.remove_trigger(t_flt)
            assert not e.observes(FAULTS)
        finally:
            await e.stop()

    asyncio.run(run())


def test_full_queue_drops_the_client_and_counts_it() -> None:
    async def run() -> None:
        hub = SseHub(SseSlots(2), 3, 30.0)
        channel = Channel(hub)
        slow, fast = Client(asyncio.Queue(4)), Client(asyncio.Queue(100))
        channel.clients.update({slow, fast})
        for k in range(10):
            channel.send(b"data: %d\n\n" % k)
            if k % 2 == 0:
                while not fast.queue.empty():
                    fast.queue.get_nowait()
        assert slow.dropped and not fast.dropped and hub.dropped_clients == 1
        assert slow.queue.get_nowait() == b""  # its stream is told to end
        hub.acquire()
        hub.acquire()
        try:
            hub.acquire()
        except Exception as exc:  # 503 past sse.max_clients
            assert getattr(exc, "status", None) == 503
        else:
            raise AssertionError("the SSE cap was not enforced")

    asyncio.run(run())


@pytest.mark.parametrize("profile,vendor", [("spec", "x-vendor"), ("medkit", "x-medkit")])
def test_a_cyclic_faults_frame_lists_them_as_the_profile_does(profile: str, vendor: str) -> None:
    async def run() -> None:
        e = engine()
        state: Any = e.state
        state.xv = vendor
        fault = FaultRecord("F1", 2, "too hot", "CONFIRMED", 1, 1, 10**18, 10**18,
                            sources=["/cam"])
        faults: Any = e.faults
        faults.faults = [fault, FaultRecord("F2", 1, "elsewhere", "CONFIRMED", 1, 1,
                                            10**18, 10**18, sources=["/other"])]
        faults.wire = FAULT_WIRE[profile](vendor)
        spec = subscription_create({"resource": "/api/v1/apps/cam/faults", "interval": "fast"},
                                   "apps", "cam", 3600, {})
        await e.start()
        try:
            sampler: CyclicSampler = e.sampler
            items = sampler._items(e.create_subscription(spec, "client-a", 0.0))
        finally:
            await e.stop()
        assert items == [faults.wire.list_item(fault)]  # what GET .../faults lists
        assert items[0]["severity"] == (2 if profile == "medkit" else "ERROR")

    asyncio.run(run())
