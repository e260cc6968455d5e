"""Built-in lifecycle provider: drives managed nodes through lifecycle_msgs GetState and
ChangeState, one background transition per node at a time."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..model.timestamps import iso
from .plans import FORCE_RESTART, LABELS, PlanError, Step, plan

log = logging.getLogger(__name__)

GET_STATE = "lifecycle_msgs/srv/GetState"
CHANGE_STATE = "lifecycle_msgs/srv/ChangeState"
IN_PROGRESS, COMPLETED, FAILED = "inProgress", "completed", "failed"


class NotManaged(Exception):
    """The node offers no lifecycle services."""


class Busy(Exception):
    """A transition of the node is still running."""


class Unavailable(Exception):
    """The node or its lifecycle services did not answer."""


@dataclass
class TransitionRecord:
    """The latest requested transition of one app's node."""

    app_id: str
    node: str
    transition: str
    from_state: str
    steps: list[Step]
    status: str = IN_PROGRESS
    done: list[str] = field(default_factory=list)
    error: str | None = None
    started_ns: int = field(default_factory=time.time_ns)
    completed_ns: int | None = None

    def body(self) -> dict[str, Any]:
        """The record as status bodies and 202 answers show it."""
        out: dict[str, Any] = {"app_id": self.app_id, "transition": self.transition,
                               "status": self.status, "from_state": self.from_state,
                               "steps": [s.label for s in self.steps], "done": list(self.done),
                               "requested_at": iso(self.started_ns)}
        if self.completed_ns is not None:
            out["completed_at"] = iso(self.completed_ns)
        if self.error:
            out["error"] = self.error
        return out


def is_managed(node: Any, fqn: str) -> bool:
    """Whether a graph node offers both lifecycle services."""
    return node is not None and (f"{fqn}/get_state", GET_STATE) in node.services and \
        (f"{fqn}/change_state", CHANGE_STATE) in node.services


class LifecycleProvider:
    """Transitions of managed nodes; `records` keeps each app's latest one."""

    def __init__(self, caller: Any, timeout_s: float) -> None:
        self.caller = caller
        self.timeout_s = timeout_s
        self.records: dict[str, TransitionRecord] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._running: dict[str, asyncio.Task[None]] = {}  # app id -> its transition's task

    async def get_state(self, fqn: str) -> int:
        """The node's primary state id; Unavailable when it does not answer."""
        from lifecycle_msgs.srv import GetState  # noqa: PLC0415 - ROS types load on first use

        from ..ros.calls.services import CallError  # noqa: PLC0415 - rclpy only once ROS runs

        try:
            resp = await self.caller.call(f"{fqn}/get_state", GET_STATE, GetState.Request(),
                                          self.timeout_s)
        except CallError as exc:
            raise Unavailable(str(exc)) from None
        return int(resp.current_state.id)

    async def request(self, app_id: str, fqn: str, transition: str) -> TransitionRecord:
        """Plan from the node's current state and run the steps in the background."""
        current = self.records.get(app_id)
        if current is not None and current.status == IN_PROGRESS:
            if transition != FORCE_RESTART:
                raise Busy(f"transition '{current.transition}' of {fqn} is still running")
            await self._abandon(app_id, current)
        state = await self.get_state(fqn)
        steps = plan(transition, state)  # PlanError: precondition not fulfilled
        record = TransitionRecord(app_id, fqn, transition, LABELS.get(state, str(state)), steps)
        self.records[app_id] = record
        if not steps:
            self._finish(record, None)
            return record
        task = asyncio.get_running_loop().create_task(self._run(record))
        self._tasks.add(task)
        self._running[app_id] = task
        task.add_done_callback(self._tasks.discard)
        return record

    async def _abandon(self, app_id: str, record: TransitionRecord) -> None:
        """Stop a running transition (force-restart); its record says it was abandoned."""
        task = self._running.pop(app_id, None)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if record.status == IN_PROGRESS:
            self._finish(record, "abandoned for a force-restart")

    async def _run(self, record: TransitionRecord) -> None:
        from lifecycle_msgs.msg import Transition  # noqa: PLC0415 - ROS types load on first use
        from lifecycle_msgs.srv import ChangeState  # noqa: PLC0415 - ROS types load on first use

        from ..ros.calls.services import CallError  # noqa: PLC0415 - rclpy only once ROS runs

        for step in record.steps:
            request = ChangeState.Request(transition=Transition(id=step.transition_id))
            try:
                resp = await self.caller.call(f"{record.node}/change_state", CHANGE_STATE,
                                              request, self.timeout_s)
            except CallError as exc:
                self._finish(record, f"{step.label}: {exc}")
                return
            except Exception as exc:  # the record must never stay in progress
                log.exception("lifecycle step %s of %s failed", step.label, record.node)
                self._finish(record, f"{step.label}: {exc}")
                return
            if not resp.success:
                self._finish(record, f"the node refused '{step.label}' (its callback failed "
                                     "or the transition is not valid from its state)")
                return
            record.done.append(step.label)
        self._finish(record, None)

    @staticmethod
    def _finish(record: TransitionRecord, error: str | None) -> None:
        record.status = FAILED if error else COMPLETED
        record.error = error
        record.completed_ns = time.time_ns()

    async def close(self) -> None:
        """Cancel running transitions."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


__all__ = ["Busy", "LifecycleProvider", "NotManaged", "PlanError", "TransitionRecord",
           "Unavailable", "is_managed"]
