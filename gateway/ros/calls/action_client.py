"""The gateway's action client: rclpy's ActionClient, safe against what the graph sends.

Two servers of one action (a node launched twice) both answer every goal, cancel and result
request. rclpy takes a second goal answer that comes before the first one's bookkeeping ran
(a task of the executor) as a second goal with the same id and raises; under the
EventsExecutor any exception out of a waitable kills the process (rclpy's handler of it
crashes). Here an answer whose request was answered already, or given up, is dropped (the
first answer counts), nothing raised in take_data or execute reaches the executor, and the
reply readers keep REPLY_DEPTH answers like the service clients: twice the answers must not
push an awaited one out of a reader's history.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any

from rclpy.action import ActionClient

from .loop_client import client_qos

log = logging.getLogger(__name__)
# Requests answered lately, per kind: an answer to one of them is a second server's.
ANSWERED_KEPT = 256
_KINDS = ("goal", "cancel", "result")


class GatewayActionClient(ActionClient):
    """An ActionClient that keeps the first answer to each request and never raises into
    its executor; `duplicates` counts answers a second server sent."""

    def __init__(self, node: Any, action_type: Any, action_name: str) -> None:
        # rclpy adds the client to the node's waitables before it creates `_lock`; the executor
        # thread, spinning meanwhile, would die on the missing attribute.
        self._lock = threading.Lock()
        self.duplicates = 0
        self.dropped = 0  # answers to requests the gateway gave up (budget) or never sent
        self.failures = 0  # exceptions kept from the executor
        self._answered: dict[str, collections.deque[int]] = {
            kind: collections.deque(maxlen=ANSWERED_KEPT) for kind in _KINDS}
        qos = client_qos()
        super().__init__(node, action_type, action_name, goal_service_qos_profile=qos,
                         result_service_qos_profile=qos, cancel_service_qos_profile=qos)

    def take_data(self) -> Any:
        """rclpy's take_data; a failed take is logged and yields nothing."""
        try:
            return super().take_data()
        except Exception:
            self._failed("taking an answer")
            return {}

    async def execute(self, taken_data: Any) -> None:
        """rclpy's execute on the answers still awaited; a failure is logged, not raised."""
        try:
            self._drop_unawaited(taken_data)
            await super().execute(taken_data)
        except Exception:
            self._failed("handling an answer")

    def _failed(self, what: str) -> None:
        """Log the current exception: the first with its traceback, later ones at debug."""
        self.failures += 1
        if self.failures == 1:
            log.exception("action %s: %s failed (ignored; later failures are logged at debug "
                          "level)", self._action_name, what)
        else:
            log.debug("action %s: %s failed", self._action_name, what, exc_info=True)

    def _drop_unawaited(self, taken_data: dict[str, Any]) -> None:
        pending = {"goal": self._pending_goal_requests, "cancel": self._pending_cancel_requests,
                   "result": self._pending_result_requests}
        for kind in _KINDS:
            taken = taken_data.get(kind)
            if taken is None:
                continue
            seq = taken[0]
            fut = pending[kind].get(seq)
            answered = self._answered[kind]
            if fut is not None and not fut.done():
                answered.append(seq)
                continue
            del taken_data[kind]
            if fut is None and seq not in answered:
                self.dropped += 1
                continue
            self.duplicates += 1
            if self.duplicates == 1:
                log.warning("action %s: a %s request was answered twice: more than one "
                            "action server serves it (a node launched twice?); the first "
                            "answer counts", self._action_name, kind)
