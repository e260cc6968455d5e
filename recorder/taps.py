"""Raw subscriptions feeding the ring buffer (the recorder's only rclpy user, imported lazily).

Each subscription hands serialized CDR bytes plus receive and source timestamps to one
push under a lock; no message object is ever built. Subscriptions live in their own
callback group so a busy topic never delays the gateway's other callbacks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from . import schemas
from .buffer import RingBuffer
from .writer import TopicMeta

log = logging.getLogger(__name__)

# Samples queued per subscription inside the middleware before the callback runs.
SUBSCRIPTION_DEPTH = 10


def _policy_name(value: Any) -> str:
    return str(getattr(value, "name", value)).lower()


def offered_qos(node: Any, topic: str) -> tuple[list[dict[str, Any]], str]:
    """Publishers' QoS profiles in rosbag2 form, and a type hash (blocking graph query)."""
    profiles = []
    hash_text = ""
    for info in node.get_publishers_info_by_topic(topic):
        q = info.qos_profile
        profiles.append(schemas.qos_profile(
            history=_policy_name(q.history), depth=q.depth,
            reliability=_policy_name(q.reliability), durability=_policy_name(q.durability),
            deadline_ns=q.deadline.nanoseconds, lifespan_ns=q.lifespan.nanoseconds,
            liveliness=_policy_name(q.liveliness),
            lease_ns=q.liveliness_lease_duration.nanoseconds,
            avoid_ros_namespace_conventions=q.avoid_ros_namespace_conventions))
        if not hash_text:
            hash_text = str(info.topic_type_hash)
    return profiles, hash_text


def _subscription_qos(profiles: list[dict[str, Any]]) -> Any:
    """Reliable only when every publisher is; transient local only when every one is."""
    from rclpy.qos import (  # noqa: PLC0415 - rclpy only once ROS runs
        DurabilityPolicy,
        HistoryPolicy,
        QoSProfile,
        ReliabilityPolicy,
    )

    reliable = bool(profiles) and all(p["reliability"] == "reliable" for p in profiles)
    latched = bool(profiles) and all(p["durability"] == "transient_local" for p in profiles)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=SUBSCRIPTION_DEPTH,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


class Taps:
    """Topic subscriptions into one ring buffer; `metas[i]` describes buffer topic i."""

    def __init__(self, buffer: RingBuffer) -> None:
        self.buffer = buffer
        self.lock = threading.Lock()
        self.metas: list[TopicMeta] = []
        self.subs: dict[str, tuple[str, int, Any]] = {}  # topic -> (type, index, subscription)
        self.failed: dict[str, str] = {}  # topic -> reason (not retried for the same type)
        self._group: Any = None

    def callback(self, index: int) -> Any:
        """The raw callback of buffer topic `index` (runs on the executor thread)."""
        push = self.buffer.push
        lock = self.lock

        def on_message(data: bytes, info: Mapping[str, int]) -> None:
            recv = info.get("received_timestamp") or time.time_ns()
            with lock:
                push(index, recv, info.get("source_timestamp") or 0, data)

        return on_message

    def update(self, node: Any, wanted: Mapping[str, str]) -> tuple[list[str], list[str]]:
        """Subscribe to wanted topics (topic -> type), drop the others (blocking: ROS thread).

        Returns (added, removed).
        """
        from rclpy.callback_groups import (  # noqa: PLC0415 - rclpy only once ROS runs
            MutuallyExclusiveCallbackGroup,
        )

        from gateway.ros.interfaces.message import (  # noqa: PLC0415 - gateway.ros once ROS runs
            import_type,
        )

        if self._group is None:
            self._group = MutuallyExclusiveCallbackGroup()
        removed = []
        for topic, (typ, _i, sub) in list(self.subs.items()):
            if wanted.get(topic) != typ:
                self._destroy(node, sub)
                del self.subs[topic]
                removed.append(topic)
        added = []
        for topic, typ in wanted.items():
            if topic in self.subs or self.failed.get(topic, "").startswith(typ + ":"):
                continue
            try:
                cls = import_type(typ)
                definition = schemas.ros2msg_definition(typ)
                profiles, hash_text = offered_qos(node, topic)
                meta = TopicMeta(topic, schemas.full_type(typ), definition,
                                 schemas.type_hash(typ) or hash_text, tuple(profiles))
                with self.lock:
                    index = len(self.metas)
                    self.metas.append(meta)
                sub = node.create_subscription(cls, topic, self.callback(index),
                                               _subscription_qos(profiles), raw=True,
                                               callback_group=self._group)
            except Exception as exc:  # UnknownTypeError, SchemaError, RCLError
                self.failed[topic] = f"{typ}: {exc}"
                log.warning("recorder: cannot record %s (%s): %s", topic, typ, exc)
                continue
            self.subs[topic] = (typ, index, sub)
            added.append(topic)
        return added, removed

    def close(self, node: Any) -> None:
        """Destroy every subscription (blocking: ROS thread)."""
        for _typ, _i, sub in self.subs.values():
            self._destroy(node, sub)
        self.subs.clear()

    @staticmethod
    def _destroy(node: Any, sub: Any) -> None:
        try:
            node.destroy_subscription(sub)
        except Exception:
            log.debug("recorder: destroy_subscription failed", exc_info=True)

    def snapshot(self, after_seq: int = 0, since_ns: int = 0, until_ns: int = -1
                 ) -> tuple[list[Any], int]:
        """Buffer entries (seq, topic index, recv, source, data), oldest first, and the
        sequence number of the newest push at that moment."""
        with self.lock:
            return self.buffer.snapshot(after_seq, since_ns, until_ns), self.buffer.last_seq

    def trim(self, now_ns: int) -> None:
        """Age out messages while topics are idle."""
        with self.lock:
            self.buffer.trim(now_ns)

    def stats(self) -> dict[str, Any]:
        """Buffer figures for /health."""
        with self.lock:
            b = self.buffer
            return {"topics": sorted(self.subs), "messages": b.count, "bytes": b.nbytes,
                    "pushed": b.last_seq, "evicted": b.evicted, "dropped_oversize": b.dropped}
