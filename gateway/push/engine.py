"""The push engine: triggers and cyclic subscriptions fed by the event bus and the sample pool."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SERVICE_UNAVAILABLE, ApiError
from ..events import DATA, FAULTS, LOCKS, LOGS, OPERATIONS, UPDATES, Event, body_of
from ..http.jsonutil import dumps
from ..http.resource_helpers import local_member_apps
from ..http.settings import SseSettings
from ..model.resource_uris import topic_matches
from ..model.runids import new_id
from ..process.storage import StorageWriteError, log_write_failure
from ..process.waits import wait_event
from ..ros.topics.rosout import ReceivedLog, severity_rank
from .cadence import DeliveryCount
from .cyclic import CyclicSampler
from .model import ACTIVE, TERMINATED, Subscription, Trigger, envelope
from .orphans import OrphanClock
from .publishers import LogView
from .rules import SubscriptionSpec, TriggerSpec, trigger_create
from .settings import TriggerSettings
from .sse import Channel, SseHub, data_frame, error_frame
from .store import TriggerStore
from .topics import TopicWatch
from .wire import payload_items

if TYPE_CHECKING:
    from ..faults.service import FaultService
    from ..http.state import GatewayState
    from .service import PushDelivery

log = logging.getLogger(__name__)

HOUSEKEEPING_S = 0.25
# With no subscription, trigger, parked trigger or pinned topic there is nothing to keep: the
# housekeeping waits this long at most, or until one comes (an idle robot stays idle).
IDLE_HOUSEKEEPING_S = 60.0
PREVIOUS_FLUSH_S = 1.0
ORPHAN_SWEEP_S = 1.0
PARKED_MAX = 100  # ended triggers whose undelivered events wait for a client
PARKED_TTL_S = 300.0
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "fatal": 50}
# event kind of each observable trigger collection
KIND_OF = {"data": DATA, "faults": FAULTS, "operations": OPERATIONS, "updates": UPDATES,
           "logs": LOGS}


class PushEngine:
    """Owns every subscription and trigger of this gateway; runs on the event loop."""

    def __init__(self, state: GatewayState, hub: SseHub, topics: TopicWatch,
                 delivery: PushDelivery) -> None:
        sse = state.settings.typed(SseSettings.from_settings)
        trig = state.settings.typed(TriggerSettings.from_settings)
        self.state = state
        self.faults = delivery.faults
        self.collections = delivery.collections  # plugins' `x-` collections
        self.log_configs = delivery.log_configs
        self.hub = hub
        self.topics = topics
        self.max_subscriptions: int = sse.max_subscriptions
        self.max_duration: int = sse.max_duration_sec
        self.triggers_enabled = trig.enabled
        self.max_triggers: int = trig.max_triggers  # its range is checked at load
        self.restore = trig.on_restart_behavior == "restore"
        self.subscriptions: dict[str, Subscription] = {}
        self.triggers: dict[str, Trigger] = {}
        self._by_topic: dict[str, list[Trigger]] = {}  # rebuilt when topic bindings change
        self._indexed = (-1, -1)  # (topic watch version, trigger set version)
        self._trigger_version = 0
        self._observed: dict[str, int] = {}  # triggers per observed event kind
        self._listening: dict[str, Callable[[], None]] = {}  # kind -> unsubscribe
        self._logs = LogView(state)
        self._members: dict[tuple[str, str], tuple[int, frozenset[str]]] = {}
        self._unsubscribe: list[Callable[[], None]] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.store: TriggerStore  # opened by start(): beside the fault database, once open
        self.orphans = OrphanClock(trig.orphan_grace_sec)
        # trigger id -> (ended trigger, until when its undelivered events are kept)
        self.parked: dict[str, tuple[Trigger, float]] = {}
        self._work = asyncio.Event()  # set when a subscription, trigger or parked one comes
        self.links: Any = None  # federation.push_links.PeerLinks on a primary
        self.sampler: Any = None  # cyclic.CyclicSampler, made by start()
        self.fired = 0
        self.evaluated = 0
        self.orphaned = 0

    # lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the trigger store, listen to the bus, load persistent triggers, start the
        timers."""
        self.store = TriggerStore(_store_path(self.state, self.faults),
                                  getattr(self.state, "storage", None))
        self._unsubscribe.append(self.state.events.subscribe([LOCKS], self._on_lock))
        try:
            if self.restore:
                self._load()
            else:
                for tid in self.store.ids():
                    self.store.delete(tid)
        except StorageWriteError as exc:  # a full disk at start: the rows wait for the next one
            log_write_failure(log, "persistent triggers: %s not stored", "the start's changes",
                              exc)

        self.sampler = CyclicSampler(self)
        self._tasks.append(asyncio.ensure_future(self._housekeeping()))
        self._tasks.extend(self.sampler.start())

    async def stop(self) -> None:
        """Stop timers, end streams, store previous values."""
        for off in [*self._unsubscribe, *self._listening.values()]:
            off()
        self._listening.clear()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._flush_previous()
        self.store.close()

    def end_streams(self) -> None:
        """End every open stream (server shutdown)."""
        for sub in self.subscriptions.values():
            if sub.channel is not None:
                sub.channel.close()
        for trig in self.triggers.values():
            if trig.channel is not None:
                trig.channel.close()

    # entities -------------------------------------------------------------------------------
    def members(self, entity_type: str, entity_id: str) -> frozenset[str]:
        """The entity id and the ids of its member apps (cached per entity generation)."""
        entities = self.state.cache.entities
        key = (entity_type, entity_id)
        cached = self._members.get(key)
        if cached is not None and cached[0] == entities.generation:
            return cached[1]
        entity = entities.get(entity_type, entity_id)
        ids = {entity_id}
        if entity is not None:
            ids.update(a.id for a in entities.member_apps(entity))
        out = frozenset(ids)
        self._members[key] = (entities.generation, out)
        return out

    # subscriptions --------------------------------------------------------------------------
    def create_subscription(self, spec: SubscriptionSpec, client_id: str | None,
                            now: float) -> Subscription:
        """A new subscription; 503 past sse.max_subscriptions."""
        if len(self.subscriptions) >= self.max_subscriptions:
            raise ApiError(503, SERVICE_UNAVAILABLE,
                           f"Too many cyclic subscriptions (sse.max_subscriptions="
                           f"{self.max_subscriptions}); delete one first",
                           parameters={"max_subscriptions": self.max_subscriptions})
        sub = Subscription(new_id("sub"), spec.ref.entity_type,
                           spec.ref.entity_id, spec.ref, spec.interval, spec.duration,
                           now + spec.duration, client_id)
        sub.channel = Channel(self.hub)
        self.subscriptions[sub.id] = sub
        self._work.set()
        self._want_ticks(sub.interval)
        self.orphans.saw((sub.entity_type, sub.entity_id))
        if spec.ref.collection == "data":
            self.topics.want(sub, sub.entity_type, sub.entity_id, spec.ref.path, events=False)
        return sub

    def _want_ticks(self, interval: str) -> None:
        if self.sampler is not None:  # None before start()
            self.sampler.want(interval)

    def subscriptions_of(self, entity_type: str, entity_id: str) -> list[Subscription]:
        """Subscriptions created on an entity."""
        return [s for s in self.subscriptions.values()
                if (s.entity_type, s.entity_id) == (entity_type, entity_id)]

    def remove_subscription(self, sub: Subscription) -> None:
        """Delete a subscription and end its streams."""
        if self.subscriptions.pop(sub.id, None) is None:
            return
        self.topics.drop(sub)
        if self.links is not None:
            self.links.drop(sub)
        if sub.channel is not None:
            sub.channel.close()

    def update_subscription(self, sub: Subscription, interval: str | None,
                            duration: int | None, now: float) -> None:
        """PUT: a new interval and/or duration (a duration restarts the expiry from now)."""
        if interval is not None:
            sub.interval = interval
            self._want_ticks(interval)
        if duration is not None:
            sub.duration = duration
            sub.expires_at = now + duration

    # triggers -------------------------------------------------------------------------------
    def create_trigger(self, spec: TriggerSpec, raw: dict[str, Any], now: float,
                       trigger_id: str | None = None) -> Trigger:
        """A new trigger; 503 past triggers.max_triggers or when it cannot be stored."""
        if len(self.triggers) >= self.max_triggers:
            raise ApiError(503, SERVICE_UNAVAILABLE,
                           f"Too many triggers (triggers.max_triggers={self.max_triggers}); "
                           "delete one first", parameters={"max_triggers": self.max_triggers})
        tid = trigger_id or new_id("trig")
        expires = now + spec.lifetime if spec.lifetime is not None else None
        trig = Trigger(tid, spec.ref.entity_type, spec.ref.entity_id, spec, raw, now, expires)
        trig.channel = Channel(self.hub)
        if spec.persistent and trigger_id is None:
            try:
                self.store.put(tid, trig.entity_type, trig.entity_id, raw, now, expires)
            except StorageWriteError:
                raise  # 507 naming the directory and its free space (process/storage.py)
            except Exception as exc:
                raise ApiError(503, SERVICE_UNAVAILABLE,
                               f"The trigger could not be stored: {exc}") from None
        self.triggers[tid] = trig
        self._work.set()
        self._trigger_version += 1
        if trigger_id is None:  # created on an existing entity (a restored one may wait)
            self.orphans.saw((trig.entity_type, trig.entity_id))
        self._observe(trig, 1)
        if spec.ref.collection == "data":
            self.topics.want(trig, trig.entity_type, trig.entity_id, spec.ref.path,
                             events=True)
        return trig

    def _observe(self, trig: Trigger, delta: int) -> None:
        """Count the triggers of its kind; the engine hears a kind on the bus only while a
        trigger observes it (a publisher builds nothing while nobody listens)."""
        kind = KIND_OF.get(trig.collection, trig.collection)
        count = self._observed[kind] = self._observed.get(kind, 0) + delta
        if count > 0 and kind in KIND_OF.values() and kind not in self._listening:
            self._listening[kind] = self.state.events.subscribe([kind], self._on_event)
        elif count <= 0 and kind in self._listening:
            self._listening.pop(kind)()

    def observes(self, kind: str) -> bool:
        """Whether any trigger observes changes of this kind."""
        return self._observed.get(kind, 0) > 0

    def triggers_of(self, entity_type: str, entity_id: str) -> list[Trigger]:
        """Triggers created on an entity."""
        return [t for t in self.triggers.values()
                if (t.entity_type, t.entity_id) == (entity_type, entity_id)]

    def remove_trigger(self, trig: Trigger, terminated: bool = False) -> None:
        """Delete (or terminate) a trigger: its stream closes after what is queued."""
        if self.triggers.pop(trig.id, None) is None:
            return
        trig.status = TERMINATED
        self.topics.drop(trig)
        self._trigger_version += 1
        self._observe(trig, -1)
        if trig.spec.persistent:
            try:
                self.store.delete(trig.id)
            except Exception:
                log.exception("stored trigger %s could not be deleted", trig.id)
        if self.links is not None:
            self.links.drop(trig)
        if terminated and trig.pending:
            self._park(trig, time.time())
        if trig.channel is not None:
            trig.channel.close()

    def _park(self, trig: Trigger, now: float) -> None:
        """Keep an ended trigger's undelivered events for the next client (bounded)."""
        self.parked[trig.id] = (trig, now + PARKED_TTL_S)
        self._work.set()
        while len(self.parked) > PARKED_MAX:
            del self.parked[next(iter(self.parked))]

    def take_parked(self, entity_type: str, entity_id: str, trigger_id: str,
                    now: float) -> list[bytes] | None:
        """The undelivered events of an ended trigger of the entity (handed out once)."""
        parked = self.parked.get(trigger_id)
        if parked is None or (parked[0].entity_type, parked[0].entity_id) != (
                entity_type, entity_id):
            return None
        del self.parked[trigger_id]
        if parked[1] <= now:
            return None
        events = list(parked[0].pending)
        parked[0].pending.clear()
        return events

    def set_lifetime(self, trig: Trigger, lifetime: int, now: float) -> None:
        """PUT: expiry = now + lifetime."""
        trig.expires_at = now + lifetime
        trig.raw = {**trig.raw, "lifetime": lifetime}
        trig.spec.lifetime = lifetime
        if trig.spec.persistent:
            self.store.set_expiry(trig.id, trig.expires_at)

    def _data_index(self) -> dict[str, list[Trigger]]:
        """Active data triggers by resolved topic (rebuilt after bindings change)."""
        key = (self.topics.version, self._trigger_version)
        if key != self._indexed:
            index: dict[str, list[Trigger]] = {}
            for trig in self.triggers.values():
                if trig.collection == "data":
                    trig.topic = self.topics.topic_of(trig)
                    if trig.topic is not None:
                        index.setdefault(trig.topic, []).append(trig)
            self._by_topic, self._indexed = index, key
        return self._by_topic

    def _load(self) -> None:
        # Stored ids (`trig_<n>` of older releases, `trig_<tag>_<n>`) are kept as they are;
        # new ids carry this process's tag, so they never meet a stored one.
        now = time.time()
        for row in self.store.active():
            if row["expires_at"] is not None and row["expires_at"] <= now:
                self.store.terminate(row["id"])
                continue
            try:
                spec = trigger_create(row["body"], row["entity_type"], row["entity_id"])
                trig = self.create_trigger(spec, row["body"], row["created_at"], row["id"])
            except ApiError as exc:
                log.warning("stored trigger %s dropped: %s", row["id"], exc.message)
                self.store.terminate(row["id"])
                continue
            trig.expires_at = row["expires_at"]
            trig.previous, trig.has_previous = row["previous"], row["has_previous"]
        if self.triggers:
            log.info("restored %d persistent triggers", len(self.triggers))

    # events ---------------------------------------------------------------------------------
    def _on_event(self, event: Event[Any]) -> None:
        entity_id = event.entity_id
        if isinstance(event.payload, ReceivedLog):  # the ROS side knows no entities
            entity_id, body = self._logs.view(event.payload)
        else:
            body = body_of(event)
        if body is None:
            return  # nothing to observe: a change the fault stream does not show, a bad sample
        now = time.time()
        if event.kind == DATA:
            candidates: Iterable[Trigger] = tuple(self._data_index().get(event.resource, ()))
        else:
            candidates = [t for t in self.triggers.values() if KIND_OF.get(t.collection)
                          == event.kind]
        frame: list[bytes] = []  # one envelope for every trigger this event fires
        for trig in candidates:
            if trig.status != ACTIVE:
                continue
            if trig.expired(now):
                self.remove_trigger(trig, terminated=True)
                continue
            if event.kind != DATA and not self._matches(trig, event, entity_id, body):
                continue
            self.evaluated += 1
            if trig.evaluate(body):
                if not frame:
                    frame.append(data_frame(envelope(body, now)))
                self._fire(trig, frame[0], now)

    def _matches(self, trig: Trigger, event: Event[Any], entity_id: str | None,
                 body: Any) -> bool:
        path = trig.spec.ref.path
        if path and not (topic_matches("/" + event.resource.strip("/"), path)
                         or path.strip("/") == str(event.resource).strip("/")):
            return False
        if event.kind == UPDATES:
            return True  # updates are server-scoped: every entity's trigger observes them
        if entity_id is None:
            return False
        if entity_id not in self.members(trig.entity_type, trig.entity_id):
            return False
        if event.kind == LOGS:
            return self._log_passes(trig, body)
        return True

    def _log_passes(self, trig: Trigger, body: Any) -> bool:
        entity = self.state.cache.entities.get(trig.entity_type, trig.entity_id)
        if entity is None or not isinstance(body, dict):
            return False
        floor = self.log_configs.of(entity)["severity_filter"]
        try:
            return severity_rank(body.get("severity", "debug")) >= severity_rank(floor)
        except KeyError:
            return False

    def _fire(self, trig: Trigger, raw: bytes, now: float, inject: bool = True) -> None:
        self.fired += 1
        trig.fired += 1
        if trig.channel is not None and trig.channel.connected:
            trig.channel.send(raw)
        else:
            trig.pending.append(raw)
        if inject and trig.spec.log_settings is not None:
            self._inject_log(trig, now)
        if not trig.spec.multishot:
            self.remove_trigger(trig, terminated=True)

    def _inject_log(self, trig: Trigger, now: float) -> None:
        settings = trig.spec.log_settings or {}
        rosout = self.state.rosout
        entity = self.state.cache.entities.get(trig.entity_type, trig.entity_id)
        if rosout is None or entity is None:
            return

        apps = local_member_apps(self.state, entity)
        node = next((a.node_fqn for a in apps if a.node_fqn), None)
        if node is None:
            return
        meta = {"condition_type": trig.spec.condition.type, "resource": trig.spec.ref.uri,
                "trigger_id": trig.id}
        message = f"{settings.get('marker', 'Trigger fired')} {dumps(meta).decode()}"
        rosout.add(node.strip("/").replace("/", "."), LEVELS[settings.get("severity", "info")],
                   message, int(now * 1e9))

    # peer links (mixed entities on a primary) ------------------------------------------------
    def relayed(self, owner: Trigger | Subscription, link: Any, envelope_: Any) -> None:
        """An event of a peer's copy: a trigger fires; a subscription keeps the peer's items.

        Relayed trigger events and collection items carry `x-vendor.peer` (as relayed fault
        stream events do).
        """
        if not isinstance(envelope_, dict):
            return
        xv = self.state.xv
        if isinstance(owner, Trigger):
            envelope_[xv] = {**(envelope_.get(xv) or {}), "peer": link.peer}
            now = time.time()
            if owner.status != ACTIVE or owner.id not in self.triggers:
                return
            if owner.expired(now):
                self.remove_trigger(owner, terminated=True)
                return
            self._fire(owner, data_frame(envelope_), now, inject=False)  # logged on the peer
            return
        payload = envelope_.get("payload")
        if isinstance(payload, dict) and ("data" in payload or "items" in payload):
            for item in payload_items(payload) or ():
                if isinstance(item, dict):
                    vendor = item.get(xv)
                    item[xv] = {**(vendor if isinstance(vendor, dict) else {}),
                                "peer": link.peer}
            link.latest, link.has_latest = payload, True

    @staticmethod
    def _peer_body(owner: Trigger | Subscription) -> tuple[str, dict[str, Any]]:
        """(collection word, create body) of an owner's copies on peers."""
        if isinstance(owner, Trigger):
            return "triggers", dict(owner.raw)
        return "cyclic-subscriptions", {
            "resource": owner.ref.uri, "interval": owner.interval,
            "duration": max(1, int(owner.expires_at - time.time()))}

    def peer_failed(self, owner: Trigger | Subscription, peer: str, reason: str) -> None:
        """A peer's copy stopped answering: an error event the client can act on."""
        raw = error_frame("vendor-error",
                          f"Peer gateway '{peer}' stopped answering: {reason}; events of its "
                          f"members of {owner.entity_type} '{owner.entity_id}' stop here, "
                          "local members go on (create it again once the peer is back)",
                          vendor_code=f"x-{self.state.vendor}-peer-unavailable", peer=peer)
        if owner.channel is not None and owner.channel.connected:
            owner.channel.send(raw)
        elif isinstance(owner, Trigger):
            owner.pending.append(raw)

    def _on_lock(self, event: Event) -> None:
        """An expired lock ends the entity's cyclic subscriptions (when it covered them)."""
        if event.change != "expired" or not isinstance(event.payload, dict):
            return
        scopes = event.payload.get("scopes")
        if scopes and "cyclic-subscriptions" not in scopes:
            return
        etype = str(event.payload.get("entity_type") or "")
        etype = etype if etype.endswith("s") else etype + "s"
        eid = event.payload.get("entity_id") or event.entity_id
        for sub in self.subscriptions_of(etype, str(eid)):
            log.info("lock %s expired: cyclic subscription %s ends", event.resource, sub.id)
            self.remove_subscription(sub)

    # housekeeping ---------------------------------------------------------------------------
    async def _housekeeping(self) -> None:
        last_flush = last_sweep = time.monotonic()
        while True:
            if self.subscriptions or self.triggers or self.parked or self.topics.watched:
                await asyncio.sleep(HOUSEKEEPING_S)
            else:
                self._work.clear()
                await wait_event(self._work, IDLE_HOUSEKEEPING_S)
            now = time.time()
            for sub in [s for s in self.subscriptions.values() if s.expired(now)]:
                self.remove_subscription(sub)
            for trig in [t for t in self.triggers.values() if t.expired(now)]:
                self.remove_trigger(trig, terminated=True)
            for tid in [k for k, (_, until) in self.parked.items() if until <= now]:
                del self.parked[tid]
            if time.monotonic() - last_sweep >= ORPHAN_SWEEP_S:
                last_sweep = time.monotonic()
                self.sweep_orphans(now)
                if self.links is not None:
                    self.links.reconcile([*self.triggers.values(),
                                          *self.subscriptions.values()], self._peer_body)
            await self.topics.reconcile()
            if time.monotonic() - last_flush >= PREVIOUS_FLUSH_S:
                last_flush = time.monotonic()
                self._flush_previous()

    def sweep_orphans(self, now: float) -> None:
        """End triggers and subscriptions whose entity left discovery past the grace period."""
        owners: list[Trigger | Subscription] = [*self.triggers.values(),
                                                 *self.subscriptions.values()]
        entities = self.state.cache.entities
        gone = self.orphans.orphans({(o.entity_type, o.entity_id) for o in owners},
                                    lambda kind, eid: entities.get(kind, eid) is not None, now)
        if not gone:
            return
        for owner in owners:
            if (owner.entity_type, owner.entity_id) not in gone:
                continue
            self.orphaned += 1
            log.info("%s %s ends: %s '%s' left discovery %.0f s ago", type(owner).__name__,
                     owner.id, owner.entity_type, owner.entity_id, self.orphans.grace_s)
            if isinstance(owner, Trigger):
                self.remove_trigger(owner, terminated=True)
            else:
                self.remove_subscription(owner)

    def _flush_previous(self) -> None:
        rows = []
        for trig in self.triggers.values():
            if trig.spec.persistent and trig.dirty:
                trig.dirty = False
                rows.append((trig.id, trig.previous))
        if rows:
            try:
                self.store.set_previous(rows)
            except Exception as exc:  # a full disk: logged once by storage health
                log_write_failure(log, "previous values of %s could not be stored",
                                  "persistent triggers", exc)

    def health(self) -> dict[str, Any]:
        """The push block of /health."""
        return {"subscriptions": len(self.subscriptions),
                "max_subscriptions": self.max_subscriptions,
                "triggers": len(self.triggers), "max_triggers": self.max_triggers,
                "triggers_fired": self.fired, "trigger_evaluations": self.evaluated,
                "orphans_ended": self.orphaned, "parked_triggers": len(self.parked),
                "watched_topics": len(self.topics.watched),
                "cyclic_delivery": (self.sampler.health() if self.sampler is not None
                                    else DeliveryCount().health()),
                **self.hub.health()}


def _store_path(state: GatewayState, faults: FaultService) -> Path | None:
    """triggers.storage.path, else triggers.db beside the fault database (memory without one)."""
    configured = state.settings.typed(TriggerSettings.from_settings).storage_path
    if configured:
        return Path(str(configured)).expanduser()
    store = faults.store
    waiting = getattr(store, "waiting", None)  # the fault database opens once it can be written
    if waiting is not None:
        return Path(waiting.directory) / "triggers.db"
    if store is None or not store.persistent:
        return None
    return Path(store.path).parent / "triggers.db"

