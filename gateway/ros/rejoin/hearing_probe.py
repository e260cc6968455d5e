"""What a fresh DDS participant hears: the outside view the hearing check compares with
(ros/rejoin/hearing.py), and the echo through the gateway's executors.

The probe is a new rclpy context with one hidden node (no /rosout, no services), made only
when a check suspects the gateway's participant is deaf, and closed again within
PROBE_BUDGET_S: it costs a participant's threads for that long, nothing otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..graph.census import take_census
from ..graph.discovery_layout import prefix_pid_key

log = logging.getLogger(__name__)
PROBE_BUDGET_S = 3.0  # discovery of a local participant takes 0.1-0.3 s, a loaded host more
PROBE_POLL_S = 0.05
PROBE_NODE = "_diag_gateway_hearing"


@dataclass
class ProbeResult:
    """GUID prefixes a fresh participant discovered; topics it received a sample of."""

    prefixes: frozenset[bytes] = frozenset()
    topics: set[str] = field(default_factory=set)


def probe(domain_id: int, want_keys: Iterable[int] = (),
          topics: Iterable[tuple[str, str]] = (), budget_s: float = PROBE_BUDGET_S
          ) -> ProbeResult:
    """Make a fresh participant and let it discover for up to budget_s: until it discovers a
    participant of each wanted pid key and receives a sample of each (topic, type) (blocking;
    a worker thread)."""
    import rclpy  # noqa: PLC0415 - rclpy only once ROS runs
    from rclpy.parameter import Parameter  # noqa: PLC0415 - rclpy only once ROS runs
    from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: PLC0415 - rclpy only once ROS runs
    from rclpy.signals import SignalHandlerOptions  # noqa: PLC0415 - rclpy only once ROS runs

    from ..interfaces.message import (  # noqa: PLC0415 - gateway.ros once ROS runs
        import_type,
    )

    wanted = set(want_keys)
    topics = list(topics)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id,
               signal_handler_options=SignalHandlerOptions.NO)
    result = ProbeResult()
    node = None
    try:
        node = rclpy.create_node(PROBE_NODE, context=context, start_parameter_services=False,
                                 enable_rosout=False, parameter_overrides=[Parameter(
                                     "start_type_description_service", value=False)])
        subs = []
        for topic, type_name in topics:
            try:  # best effort matches every publisher; one sample is enough
                subs.append(node.create_subscription(
                    import_type(type_name), topic, lambda _msg: None,
                    QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT), raw=True))
            except Exception:
                log.debug("hearing probe: cannot subscribe to %s", topic, exc_info=True)
        deadline = time.monotonic() + budget_s
        while True:
            for sub in subs:  # no executor: samples are taken here
                try:
                    if sub.handle.take_message(sub.msg_type, True) is not None:
                        result.topics.add(sub.topic_name)
                except Exception:
                    log.debug("hearing probe: take", exc_info=True)
            result.prefixes = take_census(node).participants
            keys = {k for k in map(prefix_pid_key, result.prefixes) if k is not None}
            if (wanted <= keys and len(result.topics) >= len(subs)) or \
                    time.monotonic() >= deadline:
                break
            time.sleep(PROBE_POLL_S)
    finally:
        if node is not None:
            try:
                node.destroy_node()
            except Exception:
                log.debug("hearing probe: node destroy", exc_info=True)
        rclpy.try_shutdown(context=context)
    return result


class Echo:
    """An echo through the executor of one of the gateway's nodes: a guard condition
    triggered from the event loop, or (timer_s > 0, for rclpy's EventsExecutor, which runs no
    guard conditions) a timer of that period; either callback runs on the executor thread and
    hands the echo back to the loop."""

    def __init__(self, name: str, node_of: Callable[[], Any],
                 on_echo: Callable[[str], None], timer_s: float = 0.0) -> None:
        self.name = name
        self.timer_s = timer_s
        self._node_of = node_of  # the proxy's current rclpy node (it changes at a rejoin)
        self._on_echo = on_echo
        self._node: Any = None
        self._entity: Any = None
        self.armed = False  # an echo is out (or the timer runs) since the previous round

    def stale(self) -> bool:
        """True when the echo is not (yet) on the current node (a rejoin made new nodes)."""
        return self._entity is None or self._node is not self._node_of()

    def ensure(self, lock: Any = None) -> None:
        """Make the guard condition or timer on the current node (blocking); under `lock`
        (the node proxy's), so that no rejoin destroys the node meanwhile."""
        with lock if lock is not None else contextlib.nullcontext():
            node = self._node_of()
            self._entity = None  # the old one went with its node
            self._node = node
            if self.timer_s > 0:
                self._entity = node.create_timer(self.timer_s,
                                                 lambda: self._on_echo(self.name))
            else:
                self._entity = node.create_guard_condition(lambda: self._on_echo(self.name))

    def trigger(self) -> None:
        """Send one echo (a timer sends its own)."""
        if self.stale():
            self.armed = False
            return
        if self.timer_s <= 0:
            self._entity.trigger()
        self.armed = True
