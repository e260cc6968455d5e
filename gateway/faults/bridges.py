"""Drop-in fault sources: /diagnostics, /rosout and action status, mapped as facts.md says.

The mapping functions are pure; `RosBridges` owns the subscriptions (executor thread) and
hands the resulting reports to the fault service on the event loop.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .model import CRITICAL, ERROR, FAILED, PASSED, WARN, Report

log = logging.getLogger(__name__)

ROSOUT_COOLDOWN_S = 5.0
ACTION_STATUS_SUFFIX = "/_action/status"
# action_msgs/msg/GoalStatus
GOAL_SUCCEEDED, GOAL_CANCELED, GOAL_ABORTED = 4, 5, 6
TERMINAL = frozenset({GOAL_SUCCEEDED, GOAL_CANCELED, GOAL_ABORTED})

_NON_ALNUM = re.compile(r"[^0-9A-Za-z]+")
_NUMBER = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SPACE = re.compile(r"\s+")
# A log line opened by a fault code in brackets is the node's own account of a fault it
# reports through the fault reporter (the demo's lidar does both): same code, one fault
# (`faults.rosout_bridge.code_tags`).
_CODE_TAG = re.compile(r"\[([A-Z][A-Z0-9_]{2,63})\]\s*")


def upper_snake(text: str) -> str:
    """`motor temp` -> `MOTOR_TEMP` (runs of other characters become one underscore)."""
    return _NON_ALNUM.sub("_", text).strip("_").upper()


# /diagnostics ------------------------------------------------------------------------------

def diagnostic_report(level: int, name: str, message: str, source: str,
                      code_map: Mapping[str, str]) -> Report | None:
    """OK -> PASSED, WARN -> FAILED 1, ERROR -> FAILED 2, STALE -> FAILED 3."""
    code = code_map.get(name) or upper_snake(name)
    if not code:
        return None
    if level == 0:
        return Report(code, PASSED, 0, "", source)
    severity = {1: WARN, 2: ERROR, 3: CRITICAL}.get(level)
    if severity is None:
        return None
    return Report(code, FAILED, severity, message or name, source)


# /rosout -----------------------------------------------------------------------------------

# rcl_interfaces/msg/Log levels
LOG_WARN, LOG_ERROR, LOG_FATAL = 30, 40, 50


def log_severity(level: int) -> int | None:
    """WARN -> 1, ERROR -> 2, FATAL -> 3; lower levels are not faults."""
    if level >= LOG_FATAL:
        return CRITICAL
    if level >= LOG_ERROR:
        return ERROR
    if level >= LOG_WARN:
        return WARN
    return None


def normalize_message(text: str) -> str:
    """Numbers become '#', whitespace collapses: repeats of one message share a code."""
    return _SPACE.sub(" ", _NUMBER.sub("#", text)).strip()


def resolve_logger(logger_name: str, node_fqns: Iterable[str]) -> str:
    """The node fqn of a logger (`a.b.node` or a child logger `a.b.node.sub`)."""
    candidate = "/" + logger_name.strip(".").replace(".", "/")
    best = ""
    for fqn in node_fqns:
        if candidate == fqn:
            return fqn
        if candidate.startswith(fqn + "/") and len(fqn) > len(best):
            best = fqn
    return best or candidate


def rosout_code(node_fqn: str, message: str) -> str:
    """LOG_<NODE>_<8 hex of a hash of the normalized message>; NODE is the node's own name."""
    node = upper_snake(node_fqn.rsplit("/", 1)[-1]) or "UNKNOWN"
    digest = hashlib.sha1(normalize_message(message).encode()).hexdigest()[:8].upper()
    return f"LOG_{node}_{digest}"


class Cooldown:
    """At most one report per key per period."""

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self._last: dict[str, float] = {}

    def allow(self, key: str, now: float) -> bool:
        """True (and start the period) unless key passed within the period."""
        last = self._last.get(key)
        if last is not None and now - last < self.period_s:
            return False
        self._last[key] = now
        if len(self._last) > 10000:
            self._last = {k: t for k, t in self._last.items() if now - t < self.period_s}
        return True


def rosout_report(level: int, logger_name: str, message: str, node_fqns: Iterable[str],
                  cooldown: Cooldown, now: float, code_tags: bool = True) -> Report | None:
    """The report of one /rosout entry, or None (level too low, hidden node, cooling down).
    With code_tags, a line opened by `[CODE]` reports CODE (the rest is its message)."""
    severity = log_severity(level)
    if severity is None or any(p.startswith("_") for p in logger_name.split(".") if p):
        return None
    fqn = resolve_logger(logger_name, node_fqns)
    tag = _CODE_TAG.match(message) if code_tags else None
    if tag:  # keyed like the node's direct report (else listed twice)
        code, message = tag.group(1), message[tag.end():]
    else:
        code = rosout_code(fqn, message)
    if not cooldown.allow(f"{fqn}|{code}" if tag else code, now):
        return None
    return Report(code, FAILED, severity, message[:500], fqn)


# action status -----------------------------------------------------------------------------

def action_code(action_name: str, outcome: str = "ABORTED") -> str:
    """ACTION_<NAME>_ABORTED from the action's own name."""
    return f"ACTION_{upper_snake(action_name.rstrip('/').rsplit('/', 1)[-1])}_{outcome}"


class GoalTracker:
    """Terminal goal statuses not reported yet, from successive GoalStatusArray contents."""

    def __init__(self, since_ns: int) -> None:
        self.since_ns = since_ns
        self.seen: dict[bytes, int] = {}

    def update(self, goals: Iterable[tuple[bytes, int, int]]) -> list[int]:
        """goals: (goal id, status, accept stamp ns); returns newly reached terminal statuses.

        A goal first seen already finished counts only when accepted after the tracker
        started, so a gateway restart does not report old outcomes again.
        """
        out: list[int] = []
        current: dict[bytes, int] = {}
        for gid, status, stamp_ns in goals:
            prev = self.seen.get(gid)
            current[gid] = status
            if status in TERMINAL and prev != status and (
                    prev is not None or stamp_ns >= self.since_ns):
                out.append(status)
        self.seen = current
        return out


def action_reports(action_name: str, statuses: Iterable[int], server_fqn: str,
                   report_canceled: bool) -> list[Report]:
    """ABORTED -> FAILED sev 2, SUCCEEDED -> PASSED, CANCELED only when configured."""
    aborted = action_code(action_name)
    canceled = action_code(action_name, "CANCELED")
    out = []
    for status in statuses:
        if status == GOAL_ABORTED:
            out.append(Report(aborted, FAILED, ERROR, f"goal of {action_name} aborted",
                              server_fqn))
        elif status == GOAL_SUCCEEDED:
            out.append(Report(aborted, PASSED, 0, "", server_fqn))
            if report_canceled:
                out.append(Report(canceled, PASSED, 0, "", server_fqn))
        elif status == GOAL_CANCELED and report_canceled:
            out.append(Report(canceled, FAILED, WARN, f"goal of {action_name} canceled",
                              server_fqn))
    return out


# ROS side ----------------------------------------------------------------------------------

Submit = Callable[[list[Report]], None]


class RosBridges:
    """Subscriptions of the drop-in sources; callbacks run on the ROS executor thread."""

    def __init__(self, node: Any, submit: Submit, node_fqns: Callable[[], list[str]], *,
                 rosout: bool, diagnostics: bool, actions: bool,
                 diagnostics_topic: str = "/diagnostics",
                 code_map: Mapping[str, str] | None = None,
                 rosout_cooldown_s: float = ROSOUT_COOLDOWN_S, rosout_code_tags: bool = True,
                 report_canceled: bool = False, log_node: Any = None) -> None:
        from rclpy.callback_groups import (  # noqa: PLC0415 - rclpy only once ROS runs
            MutuallyExclusiveCallbackGroup,
        )

        self.node = node
        # /rosout on this node (the bridge's call node: its EventsExecutor takes an entry for
        # less CPU than a wait-set executor, and a robot's nodes log all the time)
        self.log_node = node if log_node is None else log_node
        self.log_sub: Any = None
        self.submit = submit
        self.node_fqns = node_fqns
        self.want_rosout, self.want_diagnostics, self.want_actions = rosout, diagnostics, actions
        self.diagnostics_topic = diagnostics_topic
        self.code_map = dict(code_map or {})
        self.cooldown = Cooldown(rosout_cooldown_s)
        self.code_tags = rosout_code_tags
        self.report_canceled = report_canceled
        self.group = MutuallyExclusiveCallbackGroup()
        self.subs: list[Any] = []
        self.action_subs: dict[str, Any] = {}
        self._gids: dict[bytes, str] = {}
        self.received = {"rosout": 0, "diagnostics": 0, "actions": 0}

    def start(self) -> None:
        """Create the fixed subscriptions (blocking ROS work: call off the event loop)."""
        from rclpy.qos import (  # noqa: PLC0415 - rclpy only once ROS runs
            DurabilityPolicy,
            HistoryPolicy,
            QoSProfile,
            ReliabilityPolicy,
        )

        # Volatile on purpose: /rosout publishers keep 1000 entries transient-local, and a
        # restarted gateway must not raise faults again from old log lines.
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        if self.want_rosout:
            from rcl_interfaces.msg import Log  # noqa: PLC0415 - ROS types load on first use
            self.log_sub = self.log_node.create_subscription(Log, "/rosout", self._on_log, qos)
        if self.want_diagnostics:
            from diagnostic_msgs.msg import (  # noqa: PLC0415 - ROS types load on first use
                DiagnosticArray,
            )
            self.subs.append(self.node.create_subscription(
                DiagnosticArray, self.diagnostics_topic, self._on_diagnostics, qos,
                callback_group=self.group))

    def refresh_actions(self, topics: Iterable[str]) -> None:
        """Subscribe to action status topics that appeared (blocking ROS work)."""
        if not self.want_actions:
            return
        from action_msgs.msg import GoalStatusArray  # noqa: PLC0415 - ROS types load on first use
        from rclpy.qos import (  # noqa: PLC0415 - rclpy only once ROS runs
            DurabilityPolicy,
            HistoryPolicy,
            QoSProfile,
            ReliabilityPolicy,
        )

        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        for topic in topics:
            if not topic.endswith(ACTION_STATUS_SUFFIX) or topic in self.action_subs:
                continue
            action = topic[: -len(ACTION_STATUS_SUFFIX)]
            tracker = GoalTracker(time.time_ns())
            self.action_subs[topic] = self.node.create_subscription(
                GoalStatusArray, topic, self._on_status(topic, action, tracker), qos,
                callback_group=self.group)

    def _on_log(self, msg: Any) -> None:
        self.received["rosout"] += 1
        report = rosout_report(int(msg.level), msg.name, msg.msg, self.node_fqns(),
                               self.cooldown, time.monotonic(), self.code_tags)
        if report is not None:
            self.submit([report])

    def _publisher_fqn(self, topic: str, info: Any) -> str:
        gid = (info.get("publisher_gid") or {}).get("data") if isinstance(info, dict) else None
        if not gid:
            return ""
        gid = bytes(gid)
        fqn = self._gids.get(gid)
        if fqn is None:
            from ..ros.graph.discovery_info import (  # noqa: PLC0415 - gateway.ros once ROS runs
                tracker_of,
            )
            from ..ros.graph.nameless import (  # noqa: PLC0415 - gateway.ros once ROS runs
                UNNAMED,
                endpoint_fqn,
            )

            tracker = tracker_of(self.node)
            owner_of = tracker.owner_of if tracker is not None else None
            for pub in self.node.get_publishers_info_by_topic(topic):
                name = endpoint_fqn(pub, owner_of)
                if bytes(pub.endpoint_gid) == gid:
                    fqn = name
                if pub.node_name not in UNNAMED:  # a node list may still name the others
                    self._gids[bytes(pub.endpoint_gid)] = name
        return fqn or ""

    def _on_diagnostics(self, msg: Any, info: Any) -> None:
        self.received["diagnostics"] += 1
        source = self._publisher_fqn(self.diagnostics_topic, info)
        reports = []
        for status in msg.status:
            level = status.level[0] if isinstance(status.level, bytes) else int(status.level)
            r = diagnostic_report(level, status.name, status.message,
                                  source or status.hardware_id or self.diagnostics_topic,
                                  self.code_map)
            if r is not None:
                reports.append(r)
        if reports:
            self.submit(reports)

    def _on_status(self, topic: str, action: str, tracker: GoalTracker) -> Any:
        def on_status(msg: Any, info: Any) -> None:
            self.received["actions"] += 1
            goals = [(bytes(s.goal_info.goal_id.uuid), int(s.status),
                      s.goal_info.stamp.sec * 1_000_000_000 + s.goal_info.stamp.nanosec)
                     for s in msg.status_list]
            done = tracker.update(goals)
            if done:
                server = self._publisher_fqn(topic, info) or action
                reports = action_reports(action, done, server, self.report_canceled)
                if reports:
                    self.submit(reports)

        return on_status

    def stop(self) -> None:
        """Destroy every subscription (blocking ROS work)."""
        if self.log_sub is not None:
            try:
                self.log_node.destroy_subscription(self.log_sub)
            except Exception:
                log.debug("destroy_subscription", exc_info=True)
            self.log_sub = None
        for sub in [*self.subs, *self.action_subs.values()]:
            try:
                self.node.destroy_subscription(sub)
            except Exception:
                log.debug("destroy_subscription", exc_info=True)
        self.subs.clear()
        self.action_subs.clear()
