"""`/rosout` captured into a ring buffer per logger, resolved to graph nodes when read."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from ...events import LOGS, Event, EventBus
from ..dds.bridge import RosBridge

log = logging.getLogger(__name__)

SEVERITIES = ("debug", "info", "warning", "error", "fatal")
# Loggers with a buffer; past this the one whose newest record is oldest is dropped.
MAX_LOGGERS = 4096
# Records handed to the loop for the bus at most at a time; past it the oldest go (counted).
PUBLISH_BACKLOG = 1000
_RANK = {name: k for k, name in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class LogRecord:
    """One /rosout message as received."""

    seq: int
    stamp_ns: int
    level: int
    logger: str
    message: str
    file: str = ""
    function: str = ""
    line: int = 0


@dataclass(frozen=True)
class ReceivedLog:
    """A received record on the bus (LOGS); its listener resolves the logger to a graph node
    and entity (`logger_to_node`, `entry`): the ROS side knows no entities."""

    record: LogRecord


# ---------------------------------------------------------------------------------------------
# Pure parts


def severity_of(level: int) -> str:
    """Spec severity of a middleware level (DEBUG 10 .. FATAL 50; in-between values round down)."""
    if level >= 50:
        return "fatal"
    if level >= 40:
        return "error"
    if level >= 30:
        return "warning"
    if level >= 20:
        return "info"
    return "debug"


def severity_rank(severity: str) -> int:
    """Order of a spec severity (debug 0 .. fatal 4); KeyError for an unknown one."""
    return _RANK[severity]


def logger_to_node(logger: str, node_fqns: frozenset[str]) -> str:
    """The node fqn a logger name belongs to: the longest dotted prefix naming a graph node.

    `a.b` is node `/a/b` when that node exists (a node `b` in namespace `/a`), else the child
    logger `b` of node `/a`; names matching no node map to their slash form.
    """
    parts = [p for p in logger.split(".") if p]
    for end in range(len(parts), 0, -1):
        fqn = "/" + "/".join(parts[:end])
        if fqn in node_fqns:
            return fqn
    return "/" + "/".join(parts)


def node_matches(node: str, members: Iterable[str], prefix: bool) -> bool:
    """Exact match on a member node, or (prefix) the node itself or anything below it."""
    for m in members:
        if node == m or (prefix and node.startswith(m.rstrip("/") + "/")):
            return True
    return False


def select(records: Iterable[LogRecord], nodes: dict[str, str], members: Iterable[str],
           prefix: bool, min_severity: str, limit: int) -> list[LogRecord]:
    """The newest `limit` records of the member nodes at or above a severity, oldest first.

    `nodes` maps each logger name to its node fqn.
    """
    members = list(members)
    floor = severity_rank(min_severity)
    picked = [r for r in records
              if _RANK[severity_of(r.level)] >= floor
              and node_matches(nodes.get(r.logger, ""), members, prefix)]
    picked.sort(key=lambda r: (r.stamp_ns, r.seq))
    return picked[-limit:] if limit > 0 else []


def iso_ns(stamp_ns: int) -> str:
    """ISO 8601 UTC time with nanosecond precision."""
    secs, ns = divmod(stamp_ns, 1_000_000_000)
    base = datetime.fromtimestamp(secs, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ns:09d}Z"


def entry(record: LogRecord, node: str) -> dict[str, Any]:
    """The spec's log entry; empty context fields are omitted."""
    context: dict[str, Any] = {"node": node}
    if record.function:
        context["function"] = record.function
    if record.file:
        context["file"] = record.file
    if record.line:
        context["line"] = record.line
    return {"id": str(record.seq), "timestamp": iso_ns(record.stamp_ns),
            "severity": severity_of(record.level), "message": record.message,
            "context": context}


# ---------------------------------------------------------------------------------------------
# The subscription


class RosoutLog:
    """Subscribes to /rosout once and keeps the newest `buffer_size` records per logger."""

    def __init__(self, bridge: RosBridge, buffer_size: int) -> None:
        self.bridge = bridge
        self.buffer_size = buffer_size
        self._buffers: dict[str, deque[LogRecord]] = {}
        self._lock = threading.Lock()  # the executor thread appends, the loop reads
        self._seq = 0
        self._sub: Any = None
        self.received = 0
        self._events: EventBus | None = None  # where received records go (publish_records)
        self._backlog: deque[LogRecord] = deque(maxlen=PUBLISH_BACKLOG)  # for the loop
        self._backlog_lock = threading.Lock()
        self._scheduled = False  # a drain is queued on the loop
        self.publish_dropped = 0  # records the loop did not take in time

    def publish_records(self, events: EventBus | None) -> None:
        """Publish each received record on `events` as a LOGS event while anyone listens
        (handed to the loop in batches, at most PUBLISH_BACKLOG waiting); None stops it."""
        self._events = events

    async def start(self) -> None:
        """Create the subscription (off the loop)."""
        await self.bridge.run(self._subscribe, what="subscribing to /rosout")

    def _subscribe(self) -> None:
        from rcl_interfaces.msg import Log  # noqa: PLC0415 - ROS types load on first use

        # Match the /rosout publishers (reliable, transient local, depth 1000) so the history
        # each node kept is replayed when the gateway starts after it.
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
        # On the call node: with ros.executor=events its EventsExecutor takes each entry
        # without rebuilding a wait set (a robot's nodes log all the time: about 0.35 ms of
        # CPU less per entry than the sample pool's executor).
        self._sub = self.bridge.call_node.create_subscription(Log, "/rosout", self._on_log, qos)

    def _on_log(self, msg: Any) -> None:  # executor thread
        stamp = int(msg.stamp.sec) * 1_000_000_000 + int(msg.stamp.nanosec)
        with self._lock:
            buf = self._buffer(msg.name)
            if buf and stamp <= buf[-1].stamp_ns and any(
                    r.stamp_ns == stamp and r.message == msg.msg for r in buf):
                return  # history replayed to a new subscription (a rejoin, ros/dds/bridge.py)
            self._seq += 1
            self.received += 1
            record = LogRecord(self._seq, stamp, int(msg.level), msg.name, msg.msg,
                               msg.file, msg.function, int(msg.line))
            buf.append(record)
        events = self._events
        if events is not None and events.has_listeners(LOGS):
            self._hand_over(record, events)

    def _hand_over(self, record: LogRecord, events: EventBus) -> None:  # executor thread
        loop = self.bridge.loop
        if loop is None:
            return
        with self._backlog_lock:
            if len(self._backlog) == PUBLISH_BACKLOG:
                self.publish_dropped += 1  # the loop is behind: the oldest record goes
            self._backlog.append(record)
            if self._scheduled:
                return
            self._scheduled = True
        loop.call_soon_threadsafe(self._drain, events)  # one loop wake-up per batch

    def _drain(self, events: EventBus) -> None:
        with self._backlog_lock:
            batch = list(self._backlog)
            self._backlog.clear()
            self._scheduled = False
        for record in batch:
            events.publish(Event(LOGS, None, str(record.seq), "created", ReceivedLog(record),
                                 record.stamp_ns))

    def snapshot(self) -> tuple[list[str], list[LogRecord]]:
        """Logger names and every buffered record (a copy)."""
        with self._lock:
            loggers = list(self._buffers)
            records = [r for buf in self._buffers.values() for r in buf]
        return loggers, records

    def add(self, logger: str, level: int, message: str, stamp_ns: int) -> LogRecord:
        """Insert a record from the gateway itself (e.g. a trigger's marker entry)."""
        with self._lock:
            self._seq += 1
            record = LogRecord(self._seq, stamp_ns, level, logger, message)
            self._buffer(logger).append(record)
        return record

    def _buffer(self, logger: str) -> deque[LogRecord]:
        """The logger's ring buffer (caller holds the lock)."""
        buf = self._buffers.get(logger)
        if buf is None:
            if len(self._buffers) >= MAX_LOGGERS:
                stale = min(self._buffers, key=lambda k: self._buffers[k][-1].seq
                            if self._buffers[k] else 0)
                del self._buffers[stale]
            buf = self._buffers[logger] = deque(maxlen=self.buffer_size)
        return buf

    async def stop(self) -> None:
        """Drop the subscription."""
        sub, self._sub = self._sub, None
        if sub is None:
            return
        try:
            await self.bridge.run(self.bridge.call_node.destroy_subscription, sub, timeout=2.0)
        except Exception:
            log.debug("destroy /rosout subscription", exc_info=True)
