"""Raw subscription pool (LRU): the newest CDR sample per topic, converted only when read."""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

import orjson
from rclpy.duration import Duration
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)

from ...events import DATA, Event, EventBus, Payload
from ...process.waits import within
from ..dds.bridge import RosBridge
from ..graph.nameless import vendor_of
from ..interfaces.message import import_type
from .samples import sample_to_json

try:  # message-lost events count drops where the RMW reports them
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
except ImportError:  # pragma: no cover - older rclpy
    SubscriptionEventCallbacks = PublisherEventCallbacks = None  # type: ignore[assignment,misc]

log = logging.getLogger(__name__)
# A new publisher waits this long at most for the graph's subscriptions to match it.
PUBLISH_MATCH_WAIT_S = 1.0
PUBLISH_MATCH_POLL_S = 0.01
# ... and lets a best-effort subscription this long to match it on its side (measured on
# loopback: a message published at once is lost for about one new publisher in five).
BEST_EFFORT_SETTLE_S = 0.3
CYCLONE_SETTLE_S = 0.5
# ... and a reliable one too, for the first write of a publisher made or moved anew: a
# volatile reader that matches our writer only after a write acknowledges it unseen (under CPU
# load, a first write after a rejoin was lost so, though every ack came).
RELIABLE_FIRST_SETTLE_S = 0.3


@dataclass(frozen=True)
class Sample:
    """One serialized message as received."""

    data: bytes
    source_ns: int
    received_ns: int
    seq: int


@dataclass(frozen=True)
class TopicStats:
    """Receive statistics of one pooled topic: counts, recent receive times, stamp latency."""

    received: int
    lost: int
    last_received_ns: int
    recent_ns: tuple[int, ...]  # receive times of the newest samples, oldest first
    latency_ms: float | None  # receive time minus the header stamp of the newest sample


# std_msgs/Header first field: the stamp follows the 4-byte encapsulation header.
_STAMP = struct.Struct("<iI")
_STAMP_BE = struct.Struct(">iI")
RECENT_SAMPLES = 64


def _has_header(type_name: str) -> bool:
    try:
        fields = import_type(type_name).get_fields_and_field_types()
    except Exception:
        return False
    first = next(iter(fields.items()), None)
    return first is not None and first[1] == "std_msgs/Header"


def _stamp_ns(data: bytes) -> int:
    if len(data) < 12:
        return 0
    sec, nsec = (_STAMP if data[1] == 1 else _STAMP_BE).unpack_from(data, 4)
    return sec * 1_000_000_000 + nsec


class DataSample(Payload):
    """A watched topic's sample on the bus; converted to JSON once, when first read."""

    __slots__ = ("type_name", "sample", "_value", "_converted")

    def __init__(self, type_name: str, sample: Sample) -> None:
        self.type_name = type_name
        self.sample = sample
        self._value: Any = None
        self._converted = False

    def body(self) -> Any:
        """The message as JSON; None when it cannot be converted (logged once per sample)."""
        if not self._converted:
            self._converted = True
            try:
                self._value = orjson.loads(sample_to_json(self.type_name, self.sample.data))
            except Exception:
                log.debug("sample of %s could not be converted", self.type_name, exc_info=True)
        return self._value


def _publish(events: EventBus, topic: str, type_name: str, sample: Sample) -> None:
    """One DATA event per sample of a watched topic (on the loop)."""
    events.publish(Event(DATA, None, topic, "sample", DataSample(type_name, sample),
                         sample.received_ns))


class _Entry:
    __slots__ = ("topic", "type_name", "sub", "sample", "seq", "waiters", "held", "recent",
                 "lost", "stamped", "latency_ns", "watchers", "events")

    def __init__(self, topic: str, type_name: str) -> None:
        self.topic = topic
        self.type_name = type_name
        self.sub: Any = None
        self.sample: Sample | None = None
        self.seq = 0
        self.waiters: list[asyncio.Future[None]] = []
        # In the pool: False once evicted or replaced (a new type), so what was built from
        # its samples (data/reads.py) no longer holds.
        self.held = True
        self.recent: deque[int] = deque(maxlen=RECENT_SAMPLES)  # receive times (ns)
        self.lost = 0
        self.stamped = False  # the type starts with a std_msgs/Header
        self.latency_ns: int | None = None
        self.watchers = 0  # push consumers (gateway/push): pinned
        self.events: EventBus | None = None  # where its samples are published (while watched)


def _qos_for(node: Any, topic: str) -> QoSProfile:
    """Best effort unless every publisher is reliable; transient local if all publishers are."""
    infos = node.get_publishers_info_by_topic(topic)
    reliable = bool(infos) and all(
        i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
    latched = bool(infos) and all(
        i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


class SamplePool:
    """Keeps up to `cap` raw subscriptions; the least recently read is dropped first."""

    def __init__(self, bridge: RosBridge, cap: int) -> None:
        self.bridge = bridge
        self.cap = cap
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        # refresh(topic): a pooled topic becomes the most recently used (see touch)
        self.refresh = self._entries.move_to_end
        self._lock = threading.Lock()  # sample fields are written by the executor thread
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.type_changes = 0
        self.cold_waits = 0
        self._publishers: dict[str, tuple[str, Any]] = {}
        self._publisher_born: dict[str, float] = {}  # topic -> monotonic creation time
        # topic -> when its publisher last matched a subscription anew (a node back from a
        # lost lease, a new subscriber) or was made anew (a rejoin); monotonic
        self._rematched: dict[str, float] = {}
        self._last_publish: dict[str, float] = {}  # topic -> monotonic
        on_rejoin = getattr(bridge, "on_rejoin", None)
        if on_rejoin is not None:  # the publishers are made anew on the new participant
            on_rejoin(self._publishers_renewed)
        bridge.sample_pool = self  # the hearing check reads receive times (ros/rejoin/hearing.py)

    @property
    def topics(self) -> frozenset[str]:
        """Topics the pool subscribes to (so graph counts can leave them out)."""
        return frozenset(self._entries)

    def _callback(self, entry: _Entry) -> Any:
        loop = self.bridge.loop
        assert loop is not None

        def on_sample(data: bytes, info: Any) -> None:
            received = int(info.get("received_timestamp", 0)) or time.time_ns()
            with self._lock:
                entry.seq += 1
                entry.sample = Sample(
                    data, int(info.get("source_timestamp", 0)), received, entry.seq)
                entry.recent.append(received)
                if entry.stamped:
                    stamp = _stamp_ns(data)
                    entry.latency_ns = received - stamp if stamp else None
                waiting = bool(entry.waiters)
                sample = entry.sample
            if waiting:
                loop.call_soon_threadsafe(self._wake, entry)
            events = entry.events
            if entry.watchers and events is not None and events.has_listeners(DATA):
                loop.call_soon_threadsafe(_publish, events, entry.topic, entry.type_name, sample)

        return on_sample

    @staticmethod
    def _wake(entry: _Entry) -> None:
        waiters, entry.waiters = entry.waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _subscribe(self, entry: _Entry) -> None:
        node = self.bridge.node
        cls = import_type(entry.type_name)
        entry.stamped = _has_header(entry.type_name)
        kw: dict[str, Any] = {}
        if SubscriptionEventCallbacks is not None:

            def on_lost(info: Any) -> None:
                entry.lost = int(getattr(info, "total_count", entry.lost))

            kw["event_callbacks"] = SubscriptionEventCallbacks(message_lost=on_lost)
        qos = _qos_for(node, entry.topic)
        try:
            entry.sub = node.create_subscription(
                cls, entry.topic, self._callback(entry), qos, raw=True, **kw)
        except Exception:
            if not kw:
                raise
            # an RMW without message-lost events: subscribe without the drop counter
            entry.sub = node.create_subscription(
                cls, entry.topic, self._callback(entry), qos, raw=True)

    def _drop(self, entry: _Entry) -> None:
        if entry.sub is not None:
            try:
                self.bridge.node.destroy_subscription(entry.sub)
            except Exception:
                log.debug("destroy_subscription(%s)", entry.topic, exc_info=True)
            entry.sub = None
        self._wake(entry)

    async def _entry(self, topic: str, type_name: str) -> _Entry:
        entry = self._entries.get(topic)
        if entry is not None and entry.type_name != type_name:
            self.type_changes += 1
            self._entries.pop(topic)
            entry.held = False
            await self.bridge.run(self._drop, entry)
            entry = None
        if entry is not None:
            self.hits += 1
            self._entries.move_to_end(topic)
            return entry
        self.misses += 1
        entry = _Entry(topic, type_name)
        self._entries[topic] = entry
        try:
            await self.bridge.run(self._subscribe, entry, what=f"subscribing to {topic}")
        except BaseException:
            self._entries.pop(topic, None)
            entry.held = False
            raise
        while len(self._entries) > self.cap:
            old_topic = next((t for t, e in self._entries.items() if not e.watchers), None)
            if old_topic is None:
                break  # every entry is watched: the pool grows past its cap
            old = self._entries.pop(old_topic)
            old.held = False
            self.evictions += 1
            await self.bridge.run(self._drop, old)
        return entry

    async def watch(self, topic: str, type_name: str) -> None:
        """Pin a topic (never evicted)."""
        entry = await self._entry(topic, type_name)
        entry.watchers += 1

    def publish_samples(self, topic: str, events: EventBus | None) -> None:
        """Publish each sample of a pinned topic on `events` as a DATA event, while anyone
        listens (one raw subscription serves every listener); None stops it."""
        entry = self._entries.get(topic)
        if entry is not None:
            entry.events = events if entry.watchers else None

    def unwatch(self, topic: str) -> None:
        """Undo one watch (the entry becomes evictable again at zero)."""
        entry = self._entries.get(topic)
        if entry is not None and entry.watchers > 0:
            entry.watchers -= 1
            if not entry.watchers:
                entry.events = None

    def peek(self, topic: str, type_name: str) -> _Entry | None:
        """The entry when it is subscribed with this type and holds a sample (no waiting)."""
        entry = self.find(topic, type_name)
        if entry is not None:
            self.touch(entry)
        return entry

    def find(self, topic: str, type_name: str) -> _Entry | None:
        """What peek returns, without counting a hit or refreshing the LRU order."""
        entry = self._entries.get(topic)
        if entry is None or entry.sample is None or entry.type_name != type_name:
            return None
        return entry

    def touch(self, entry: _Entry) -> None:
        """Count a read of a found entry as a hit; it becomes the most recently used."""
        self.hits += 1
        self.refresh(entry.topic)

    async def latest(self, topic: str, type_name: str, timeout: float) -> tuple[Sample | None,
                                                                                  _Entry]:
        """The newest sample, waiting up to timeout for a first one; None when none came."""
        entry = await self._entry(topic, type_name)
        if entry.sample is None and timeout > 0:
            fut = asyncio.get_running_loop().create_future()
            entry.waiters.append(fut)
            self.cold_waits += 1
            try:
                await within(fut, timeout)
            except asyncio.TimeoutError:
                pass
            finally:
                self.cold_waits -= 1
                if fut in entry.waiters:
                    entry.waiters.remove(fut)
        return entry.sample, entry

    async def track(self, topic: str, type_name: str) -> None:
        """Subscribe to topic now (as a read would), so receive statistics accumulate."""
        await self._entry(topic, type_name)

    def topic_stats(self, topic: str) -> TopicStats | None:
        """Receive statistics of a pooled topic; None when the pool does not hold it."""
        entry = self._entries.get(topic)
        if entry is None:
            return None
        with self._lock:
            recent = tuple(entry.recent)
            latency = entry.latency_ns
            seq = entry.seq
        return TopicStats(seq, entry.lost, recent[-1] if recent else 0, recent,
                          latency / 1e6 if latency is not None else None)

    def receive_times(self) -> dict[str, tuple[tuple[int, ...], int]]:
        """Each pooled topic's recent receive times (ns, oldest first) and receive count."""
        with self._lock:
            return {t: (tuple(e.recent), e.seq) for t, e in self._entries.items()}

    def type_of(self, topic: str) -> str | None:
        """The type a pooled topic is subscribed with (None: not pooled)."""
        entry = self._entries.get(topic)
        return None if entry is None else entry.type_name

    def published(self, topics: list[str]) -> set[str]:
        """Those of the topics that have publishers besides the gateway (blocking)."""
        node = self.bridge.node
        own = node.get_name()
        return {t for t in topics if any(i.node_name != own
                                         for i in node.get_publishers_info_by_topic(t))}

    def newest(self, topic: str) -> Sample | None:
        """The newest sample of a pooled topic, without touching the LRU order."""
        entry = self._entries.get(topic)
        return entry.sample if entry is not None else None

    async def publish(self, topic: str, type_name: str, msg: Any,
                      match_wait_s: float = PUBLISH_MATCH_WAIT_S) -> int:
        """Publish msg on topic, creating (or re-typing) the publisher on first use; the
        number of subscriptions (other than the gateway's own) it has matched.

        For `match_wait_s` from its creation a publisher makes sure a message reaches the
        subscriptions the graph shows (a message sent before a subscription has matched the
        publisher on its own side is dropped there; a first write was lost): it waits until
        it has matched them all, lets best-effort ones settle, and waits for the reliable
        ones to acknowledge.
        """
        current = self._publishers.get(topic)
        if current is None or current[0] != type_name:
            node = self.bridge.node
            cls = import_type(type_name)
            pub = await self.bridge.run(self._create_publisher, node, cls, topic,
                                        what=f"creating a publisher on {topic}")
            if current is not None:
                await self.bridge.run(node.destroy_publisher, current[1])
            self._publishers[topic] = current = (type_name, pub)
            self._publisher_born[topic] = time.monotonic()
        pub = current[1]
        # The first write since the publisher was made, matched a subscription anew or moved
        # to a new participant goes through the whole wait: after a node resumes, its reader
        # learns of our writer again only at our next announcement, and a write it has not
        # matched on its side is dropped there (the writer counted the match all along).
        now = time.monotonic()
        fresh = max(self._publisher_born.get(topic, 0.0), self._rematched.get(topic, 0.0))
        first = self._last_publish.get(topic, -1.0) < fresh
        deadline = (now if first else fresh) + match_wait_s
        reliable = False
        if now < deadline:
            reliable = await self._await_match(topic, pub, deadline, first)
        pub.publish(msg)
        self._last_publish[topic] = time.monotonic()
        if reliable and (left := deadline - time.monotonic()) > 0:
            await self.bridge.run(pub.wait_for_all_acked, Duration(seconds=left),
                                  what=f"waiting for the subscribers of {topic}")
        own = 1 if topic in self._entries else 0
        return max(int(pub.get_subscription_count()) - own, 0)

    def _create_publisher(self, node: Any, cls: Any, topic: str) -> Any:
        """A publisher that notes each new match (blocking)."""
        if PublisherEventCallbacks is not None:
            def matched(info: Any) -> None:
                if int(getattr(info, "current_count_change", 0)) > 0:
                    self._rematched[topic] = time.monotonic()

            try:
                return node.create_publisher(cls, topic, 10, event_callbacks=(
                    PublisherEventCallbacks(matched=matched)))
            except Exception:  # an RMW without matched events: new matches go unnoticed
                log.debug("publisher matched events on %s", topic, exc_info=True)
        return node.create_publisher(cls, topic, 10)

    def _publishers_renewed(self) -> None:
        """A rejoin makes every publisher anew (RosBridge.on_rejoin)."""
        now = time.monotonic()
        for topic in self._publishers:
            self._rematched[topic] = now

    async def _await_match(self, topic: str, pub: Any, deadline: float,
                           first: bool = False) -> bool:
        """Wait (until `deadline`) for the topic's subscriptions to match `pub`, and let them
        settle; True when some other node's subscription is reliable (its delivery can be
        acknowledged)."""
        infos = await self.bridge.run(self.bridge.node.get_subscriptions_info_by_topic, topic,
                                      what=f"listing the subscribers of {topic}")
        while pub.get_subscription_count() < len(infos) and time.monotonic() < deadline:
            await asyncio.sleep(PUBLISH_MATCH_POLL_S)
        others = [i for i in infos if i.node_name != self.bridge.node.get_name()]
        settle = RELIABLE_FIRST_SETTLE_S if first and others else 0.0
        if any(i.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT for i in others):
            # No acknowledgement tells when a best-effort reader has matched us on its side.
            settle = BEST_EFFORT_SETTLE_S
        if any(vendor_of(bytes(i.endpoint_gid)) == "cyclone" for i in others):
            # Nor from a Cyclone reader: one that matches our writer after a write starts past
            # it and acknowledges it unseen (a first write to a Cyclone robot was lost).
            settle = CYCLONE_SETTLE_S
        if settle:
            await asyncio.sleep(max(0.0, min(settle, deadline - time.monotonic())))
        return any(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in others)

    def stats(self, graph_events: int) -> dict[str, Any]:
        """Figures for /health's data-provider block."""
        return {
            "pool_size": len(self._entries),
            "pool_cap": self.cap,
            "pool_hits": self.hits,
            "pool_misses": self.misses,
            "evictions_total": self.evictions,
            "type_change_events": self.type_changes,
            "graph_events_received": graph_events,
            "concurrent_cold_waits": self.cold_waits,
        }
