"""FaultReporter: report faults from an rclpy node to the gateway's fault manager.

Robot side only: imports rclpy and std_msgs (the robot's own, any distribution), nothing of
the gateway. Transport, on standard types so that nothing needs building:

- reports: `/_fault_manager/report` (std_msgs/msg/String, reliable, volatile, depth 1000;
  hidden, so the transport never shows up as a node's data),
  JSON `{"v": 1, "reporter": <id>, "source": <node fqn>, "reports": [{"seq", "code",
  "event", "severity", "description", "stamp_ns"}]}`;
- acknowledgements: `/_fault_manager/ack` (same QoS), JSON `{"v": 1, "reporter": <id>,
  "seqs": [...]}`, sent by the gateway after the reports are committed to its database.

A report is resent every `retry_interval_sec` until acknowledged, so it survives a gateway
restart; the gateway remembers (reporter, seq) in its database and applies each pair once.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Any

REPORT_TOPIC = "/_fault_manager/report"
ACK_TOPIC = "/_fault_manager/ack"
WIRE_VERSION = 1
QUEUE_DEPTH = 1000
BATCH_MAX = 100  # reports per message (resends, coalesced bursts)
# A report made within this long after the last message waits for the next one: a burst of
# reports goes out as a few messages of up to BATCH_MAX, not one message per report, which
# for the robot and the gateway costs a wake-up and a dispatch each. A report after a quiet
# moment is published at once.
COALESCE_SEC = 0.002

INFO, WARN, ERROR, CRITICAL = 0, 1, 2, 3
FAILED, PASSED = "FAILED", "PASSED"

log = logging.getLogger(__name__)


def encode_reports(reporter: str, source: str, entries: Iterable[dict[str, Any]]) -> str:
    """Wire text of a report batch."""
    return json.dumps({"v": WIRE_VERSION, "reporter": reporter, "source": source,
                       "reports": list(entries)}, separators=(",", ":"))


def decode_reports(text: str) -> tuple[str, str, list[dict[str, Any]]] | None:
    """(reporter, source, reports) of a batch, or None when it is not a valid batch."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("v") != WIRE_VERSION:
        return None
    reporter, source, reports = obj.get("reporter"), obj.get("source"), obj.get("reports")
    if not isinstance(reporter, str) or not isinstance(source, str) or not isinstance(
            reports, list):
        return None
    good = []
    for r in reports:
        if not isinstance(r, dict):
            continue
        code, event, seq, sev = r.get("code"), r.get("event"), r.get("seq"), r.get("severity", 0)
        if not (isinstance(code, str) and code and event in (FAILED, PASSED)
                and isinstance(seq, int) and isinstance(sev, int)):
            continue
        desc = r.get("description", "")
        good.append({"seq": seq, "code": code, "event": event,
                     "severity": min(max(sev, INFO), CRITICAL),
                     "description": desc if isinstance(desc, str) else "",
                     "source": r.get("source") if isinstance(r.get("source"), str) else source})
    return reporter, source, good


def encode_ack(reporter: str, seqs: Iterable[int]) -> str:
    """Wire text of an acknowledgement."""
    return json.dumps({"v": WIRE_VERSION, "reporter": reporter, "seqs": sorted(seqs)},
                      separators=(",", ":"))


def decode_ack(text: str) -> tuple[str, list[int]] | None:
    """(reporter, seqs) of an acknowledgement, or None."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("reporter"), str):
        return None
    seqs = obj.get("seqs")
    if not isinstance(seqs, list):
        return None
    return obj["reporter"], [s for s in seqs if isinstance(s, int)]


class LocalFilter:
    """Forwards a low-severity code only once it repeated `threshold` times within the window.

    ERROR and above (`bypass_severity`) are always forwarded; so are PASSED reports.
    """

    def __init__(self, threshold: int = 3, window_sec: float = 10.0,
                 bypass_severity: int = ERROR, enabled: bool = True) -> None:
        self.threshold = max(1, threshold)
        self.window_sec = window_sec
        self.bypass_severity = bypass_severity
        self.enabled = enabled
        self._seen: dict[str, deque[float]] = {}

    def should_forward(self, code: str, severity: int, now: float) -> bool:
        """Count one FAILED report at monotonic time now; True when it must be sent."""
        if not self.enabled or severity >= self.bypass_severity:
            return True
        times = self._seen.setdefault(code, deque())
        while times and now - times[0] > self.window_sec:
            times.popleft()
        times.append(now)
        if len(times) >= self.threshold:
            times.clear()
            return True
        return False

    def reset(self, code: str) -> None:
        """Forget the repetitions of a code (it passed)."""
        self._seen.pop(code, None)


class FaultReporter:
    """Reports FAILED/PASSED events of fault codes for one node; thread-safe."""

    def __init__(self, node: Any, source_id: str | None = None, *,
                 local_filter: LocalFilter | None = None,
                 retry_interval_sec: float = 1.0, max_pending: int = 1000,
                 coalesce_sec: float = COALESCE_SEC,
                 report_topic: str = REPORT_TOPIC, ack_topic: str = ACK_TOPIC) -> None:
        from rclpy.callback_groups import (  # noqa: PLC0415 - rclpy only once ROS runs
            MutuallyExclusiveCallbackGroup,
        )
        from rclpy.qos import (  # noqa: PLC0415 - rclpy only once ROS runs
            DurabilityPolicy,
            HistoryPolicy,
            QoSProfile,
            ReliabilityPolicy,
        )
        from std_msgs.msg import String  # noqa: PLC0415 - ROS types load on first use

        self._String = String
        self.node = node
        ns = node.get_namespace()
        self.source = source_id or ((ns.rstrip("/") if ns != "/" else "") + "/" +
                                    node.get_name())
        self.reporter_id = f"{self.source}#{uuid.uuid4().hex[:12]}"
        self.filter = local_filter if local_filter is not None else LocalFilter()
        self.retry_interval_sec = retry_interval_sec
        self.max_pending = max_pending
        self.dropped = 0
        self._lock = threading.Lock()
        self._seq = 0
        self._pending: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._sent_at: dict[int, float] = {}
        # Coalescing: reports waiting for the next message, in sequence order. `_send_cv`
        # (its own lock) orders the publishes of report() and of the flusher thread.
        self.coalesce_sec = max(0.0, coalesce_sec)
        self._send_cv = threading.Condition(threading.Lock())
        self._outbox: list[dict[str, Any]] = []
        self._last_send = 0.0
        self._flusher: threading.Thread | None = None
        self._closed = False
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=QUEUE_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        group = MutuallyExclusiveCallbackGroup()
        self._pub = node.create_publisher(String, report_topic, qos)
        self._sub = node.create_subscription(String, ack_topic, self._on_ack, qos,
                                             callback_group=group)
        self._timer = node.create_timer(max(0.05, retry_interval_sec / 2), self._retry,
                                        callback_group=group)

    @property
    def pending(self) -> int:
        """Reports sent but not yet acknowledged."""
        with self._lock:
            return len(self._pending)

    def report(self, code: str, severity: int, description: str = "") -> bool:
        """Report the fault as FAILED; returns True when it was forwarded (see LocalFilter)."""
        if not code or not isinstance(code, str):
            raise ValueError("a fault code must be a non-empty string")
        if not INFO <= int(severity) <= CRITICAL:
            raise ValueError(f"severity must be 0 INFO .. 3 CRITICAL, got {severity}")
        with self._lock:
            if not self.filter.should_forward(code, int(severity), time.monotonic()):
                return False
            entry = self._enqueue(code, FAILED, int(severity), description)
        self._publish(entry)
        return True

    def report_passed(self, code: str) -> None:
        """Report that the fault's condition no longer holds (always forwarded)."""
        if not code or not isinstance(code, str):
            raise ValueError("a fault code must be a non-empty string")
        with self._lock:
            self.filter.reset(code)
            entry = self._enqueue(code, PASSED, INFO, "")
        self._publish(entry)

    def _enqueue(self, code: str, event: str, severity: int, description: str) -> dict[str, Any]:
        self._seq += 1
        entry = {"seq": self._seq, "code": code, "event": event, "severity": severity,
                 "description": description, "stamp_ns": time.time_ns()}
        self._pending[self._seq] = entry
        self._sent_at[self._seq] = time.monotonic()
        while len(self._pending) > self.max_pending:
            seq, old = self._pending.popitem(last=False)
            self._sent_at.pop(seq, None)
            self.dropped += 1
            log.warning("fault reporter %s: dropped unacknowledged report %s %s (more than %d "
                        "pending)", self.source, old["code"], old["event"], self.max_pending)
        return entry

    def _publish(self, entry: dict[str, Any]) -> None:
        """Publish a new report now, or after the reports before it when they wait."""
        with self._send_cv:
            now = time.monotonic()
            if not self._outbox and (self._closed or self.coalesce_sec == 0
                                     or now - self._last_send >= self.coalesce_sec):
                self._last_send = now
                self._send([entry])
                return
            self._outbox.append(entry)
            if len(self._outbox) >= BATCH_MAX:
                self._send_outbox()
                return
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_loop, daemon=True,
                                                 name=f"fault-reporter-{self.source}")
                self._flusher.start()
            if len(self._outbox) == 1:  # the flusher sleeps only while the outbox is empty
                self._send_cv.notify()

    def _flush_loop(self) -> None:
        """Publishes what waits in the outbox once COALESCE_SEC passed since the last send."""
        with self._send_cv:
            while not self._closed:
                if not self._outbox:
                    self._send_cv.wait()
                    continue
                delay = self._last_send + self.coalesce_sec - time.monotonic()
                if delay > 0:
                    self._send_cv.wait(delay)
                    continue
                self._send_outbox()

    def _send_outbox(self) -> None:
        """Publish the waiting reports as one message (the caller holds `_send_cv`)."""
        batch, self._outbox = self._outbox, []
        self._last_send = time.monotonic()
        if batch:
            self._send(batch)

    def _send(self, entries: list[dict[str, Any]]) -> None:
        try:
            self._pub.publish(self._String(data=encode_reports(self.reporter_id, self.source,
                                                               entries)))
        except Exception:  # context shut down: the retry path (or nobody) takes over
            log.debug("fault report publish failed", exc_info=True)

    def _retry(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [e for seq, e in self._pending.items()
                   if now - self._sent_at.get(seq, 0.0) >= self.retry_interval_sec]
            for e in due:
                self._sent_at[e["seq"]] = now
        for i in range(0, len(due), BATCH_MAX):
            self._send(due[i:i + BATCH_MAX])

    def _on_ack(self, msg: Any) -> None:
        if self.reporter_id not in msg.data:  # acks of other reporters: skip the parse
            return
        ack = decode_ack(msg.data)
        if ack is None or ack[0] != self.reporter_id:
            return
        with self._lock:
            for seq in ack[1]:
                self._pending.pop(seq, None)
                self._sent_at.pop(seq, None)

    def destroy(self) -> None:
        """Release the publisher, subscription and timer (unacknowledged reports are lost)."""
        with self._send_cv:
            self._closed = True
            self._send_outbox()  # what waits goes before the publisher
            self._send_cv.notify()
        if self._flusher is not None:
            self._flusher.join(timeout=5.0)
        for fn, obj in ((self.node.destroy_timer, self._timer),
                        (self.node.destroy_subscription, self._sub),
                        (self.node.destroy_publisher, self._pub)):
            try:
                fn(obj)
            except Exception:
                log.debug("fault reporter destroy", exc_info=True)
