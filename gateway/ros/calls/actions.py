"""Action goals through the bridge: executions holding their latest feedback and final result."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from unique_identifier_msgs.msg import UUID

from ..dds.bridge import ClientCache, RosBridge
from ..interfaces.message import message_to_dict
from .services import (
    READY_WAIT_S,
    CallFailed,
    CallTimeout,
    InFlightLimiter,
    NotAvailable,
    budget_now,
    result_within,
    wait_ready,
)

log = logging.getLogger(__name__)
# action_msgs/msg/GoalStatus values.
ROS_STATUS_NAMES = {0: "UNKNOWN", 1: "ACCEPTED", 2: "EXECUTING", 3: "CANCELING",
                    4: "SUCCEEDED", 5: "CANCELED", 6: "ABORTED"}
_RUNNING = frozenset({0, 1, 2, 3})
EXECUTING = 2
# CancelGoal.Response return codes.
CANCEL_CODES = {0: "ERROR_NONE", 1: "ERROR_REJECTED", 2: "ERROR_UNKNOWN_GOAL_ID",
                3: "ERROR_GOAL_TERMINATED"}
# Executions kept per (entity, operation); the oldest finished ones go first.
MAX_KEPT = 100
# A goal's result: checked for every RESULT_CHECK_S while it runs. RESULT_ASKS is the number of
# result requests in all (the first one and, each time the status topic showed the goal ended
# RESULT_LOST_S ago with no answer, one more): 3 means the first request and 2 repeats.
RESULT_CHECK_S = 0.5
RESULT_LOST_S = 2.0
RESULT_ASKS = 3


def execution_status(ros_status: int, rejected: bool = False) -> str:
    """The spec's execution status of a goal status (a rejected goal never ran: failed)."""
    if rejected:
        return "failed"
    if ros_status in _RUNNING:
        return "running"
    if ros_status == 4:
        return "completed"
    return "failed"  # CANCELED, ABORTED


def ros_status_name(ros_status: int, rejected: bool = False) -> str:
    """The goal status as its action_msgs name (REJECTED for a goal the server refused)."""
    return "REJECTED" if rejected else ROS_STATUS_NAMES.get(ros_status, str(ros_status))


@dataclass
class Execution:
    """One goal sent through the gateway, owned by the entity it was started on."""

    id: str
    entity: tuple[str, str]  # (kind, entity id)
    op_id: str
    action: str
    type_name: str
    created_ns: int = field(default_factory=time.time_ns)
    rejected: bool = False
    capability: str = "execute"
    feedback: dict[str, Any] | None = None
    feedback_count: int = 0
    result: dict[str, Any] | None = None
    final_status: int | None = None
    reason: str | None = None
    cancel_response: str | None = None
    handle: Any = None
    result_task: asyncio.Task[None] | None = None

    @property
    def ros_status(self) -> int:
        """The newest known goal status."""
        if self.final_status is not None:
            return self.final_status
        status = getattr(self.handle, "status", 0) if self.handle is not None else 0
        if status and status not in _RUNNING:
            # The status topic runs ahead of the result response: a terminal status is shown
            # only together with its result, so until it lands the goal still runs.
            return EXECUTING
        return status if status else 1  # accepted, no status message seen yet

    @property
    def status(self) -> str:
        """running, completed or failed."""
        return execution_status(self.ros_status, self.rejected)

    @property
    def finished(self) -> bool:
        """True once the goal reached a terminal state (or was rejected)."""
        return self.rejected or self.final_status is not None


def _terminal(handle: Any, default: int) -> int:
    """The goal's terminal status as the status topic showed it, else `default`."""
    status = getattr(handle, "status", 0)
    return status if status and status not in _RUNNING else default


def _drop_feedback_callback(client: Any, gid: uuid.UUID) -> None:
    """Forget a goal's feedback callback (rclpy only drops it when a result arrives)."""
    getattr(client, "_feedback_callbacks", {}).pop(gid.bytes, None)


class ActionManager:
    """Sends goals, tracks feedback and results, cancels; clients cached per (action, type)."""

    def __init__(self, bridge: RosBridge, limiter: InFlightLimiter) -> None:
        self.bridge = bridge
        self.limiter = limiter
        self._clients = ClientCache(bridge)
        self._by_op: dict[tuple[str, str, str], OrderedDict[str, Execution]] = {}
        self._by_id: dict[str, Execution] = {}
        self.results_asked_again = 0  # result requests repeated after a lost response

    def warnings(self) -> list[dict[str, Any]]:
        """One /health warning per action that more than one server answered."""
        return [{"code": "duplicate_action_servers",
                 "message": f"action {name} has more than one server: each request takes the "
                            f"first answer ({client.duplicates} later answers dropped)",
                 "entity_ids": [], "ros_node_fqns": [], "peer_names": []}
                for name, client in self._clients.made() if getattr(client, "duplicates", 0)]

    async def client(self, action: str, type_name: str) -> Any:
        """The cached action client, created on first use (off the loop)."""
        from .action_client import (  # noqa: PLC0415 - rclpy.action loads on first use
            GatewayActionClient,
        )

        return await self._clients.get(action, type_name, GatewayActionClient,
                                       f"creating an action client for {action}")

    async def send_goal(self, entity: tuple[str, str], op_id: str, action: str,
                        type_name: str, goal: Any, timeout: float) -> Execution:
        """Send one goal; the execution is stored (rejected goals too, as failed)."""
        loop = asyncio.get_running_loop()
        deadline = budget_now() + timeout
        try:
            client = await self.client(action, type_name)
        except Exception as exc:
            raise CallFailed(f"cannot create an action client for {action}: {exc}") from exc
        gid = uuid.uuid4()
        ex = Execution(str(gid), entity, op_id, action, type_name)

        def on_feedback(msg: Any) -> None:  # executor thread
            data = message_to_dict(msg.feedback)
            self.bridge.call_soon(self._set_feedback, ex, data)

        name = action + "/_action/send_goal"
        async with self.limiter.slot(name, timeout):
            if not await wait_ready(client, client.server_is_ready,
                                    min(deadline, budget_now() + READY_WAIT_S), deadline):
                if budget_now() >= deadline:
                    raise CallTimeout(f"action {action} did not answer within {timeout:g} s",
                                      timeout)
                raise NotAvailable(f"action {action} is not available on the ROS graph")
            try:
                rfut = client.send_goal_async(goal, feedback_callback=on_feedback,
                                              goal_uuid=UUID(uuid=list(gid.bytes)))
            except Exception as exc:
                raise CallFailed(f"sending a goal to {action} failed: {exc}") from exc
            try:
                handle = await result_within(self.bridge.wrap_future(rfut),
                                             deadline - budget_now())
            except asyncio.TimeoutError:
                client._remove_pending_goal_request(rfut)
                _drop_feedback_callback(client, gid)
                raise CallTimeout(f"action {action} did not accept or reject the goal within "
                                  f"{timeout:g} s", timeout) from None
            except Exception as exc:
                raise CallFailed(f"sending a goal to {action} failed: {exc}") from exc
        if handle.accepted:
            ex.handle = handle
            ex.result_task = loop.create_task(self._await_result(ex, client, handle),
                                              name=f"goal-{ex.id}")
        else:
            _drop_feedback_callback(client, gid)
            ex.rejected = True
            ex.reason = "the action server rejected the goal"
        self._store(ex)
        return ex

    @staticmethod
    def _set_feedback(ex: Execution, data: dict[str, Any]) -> None:
        ex.feedback = data
        ex.feedback_count += 1

    async def _await_result(self, ex: Execution, client: Any, handle: Any) -> None:
        """Ask for the goal's result until it arrives. A response can be lost (a server
        answers before DDS matched its reply writer to this client's reader, and rmw drops
        it): once the status topic shows the goal ended, an answer missing for RESULT_LOST_S
        is asked for again; after RESULT_ASKS requests in all the execution ends with the
        terminal status the status topic showed, and a reason saying the result was lost."""
        loop = asyncio.get_running_loop()
        ended_status: int | None = None  # the newest terminal status seen on the status topic
        for ask in range(1, RESULT_ASKS + 1):
            rfut = handle.get_result_async()
            answer = self.bridge.wrap_future(rfut)
            ended_at: float | None = None
            try:
                while not answer.done():
                    await asyncio.wait({answer}, timeout=RESULT_CHECK_S)
                    seen = getattr(handle, "status", 0)
                    if answer.done() or seen in _RUNNING:
                        continue
                    ended_status = seen
                    ended_at = ended_at if ended_at is not None else loop.time()
                    if loop.time() - ended_at >= RESULT_LOST_S:
                        break
            except asyncio.CancelledError:
                client._remove_pending_result_request(rfut)
                answer.cancel()
                raise
            if not answer.done():  # the goal ended and its result did not come: ask again
                client._remove_pending_result_request(rfut)
                answer.cancel()
                if ask < RESULT_ASKS:
                    self.results_asked_again += 1
                    log.info("action %s: goal %s ended but its result did not arrive; asking "
                             "again", ex.action, ex.id)
                continue
            try:
                response = answer.result()
            except Exception as exc:  # transport failure: the result is unknown
                ex.reason = f"reading the result failed: {exc}"
                ex.final_status = _terminal(handle, 6)
                return
            ex.result = message_to_dict(response.result)
            ex.final_status = int(response.status)
            return
        ex.final_status = ended_status if ended_status is not None else _terminal(handle, 6)
        ex.reason = (f"the goal ended ({ros_status_name(ex.final_status)}, as its status topic "
                     f"showed) but its result was lost: asked for {RESULT_ASKS} times, no "
                     f"answer came")
        log.warning("action %s: goal %s: %s", ex.action, ex.id, ex.reason)

    def _store(self, ex: Execution) -> None:
        key = (*ex.entity, ex.op_id)
        table = self._by_op.setdefault(key, OrderedDict())
        table[ex.id] = ex
        self._by_id[ex.id] = ex
        if len(table) > MAX_KEPT:
            for old in [e for e in table.values() if e.finished][:len(table) - MAX_KEPT]:
                self._forget(old)

    def _forget(self, ex: Execution) -> None:
        self._by_op.get((*ex.entity, ex.op_id), OrderedDict()).pop(ex.id, None)
        self._by_id.pop(ex.id, None)
        if ex.result_task is not None and not ex.result_task.done():
            ex.result_task.cancel()

    def get(self, entity: tuple[str, str], op_id: str, exec_id: str) -> Execution | None:
        """The execution when it was started on this entity's operation, else None."""
        ex = self._by_id.get(exec_id)
        if ex is None or ex.entity != entity or ex.op_id != op_id:
            return None
        return ex

    def executions(self, entity: tuple[str, str], op_id: str) -> list[Execution]:
        """Executions started on this entity's operation, oldest first."""
        return list(self._by_op.get((*entity, op_id), {}).values())

    async def cancel(self, ex: Execution, timeout: float) -> None:
        """Ask the server to cancel a running goal (no-op once finished)."""
        if ex.finished or ex.handle is None:
            return
        ex.capability = "stop"
        client = await self.client(ex.action, ex.type_name)
        deadline = budget_now() + timeout
        async with self.limiter.slot(ex.action + "/_action/cancel_goal", timeout):
            try:
                rfut = ex.handle.cancel_goal_async()
            except Exception as exc:
                raise CallFailed(f"cancelling a goal of {ex.action} failed: {exc}") from exc
            try:
                response = await result_within(self.bridge.wrap_future(rfut),
                                               deadline - budget_now())
            except asyncio.TimeoutError:
                client._remove_pending_cancel_request(rfut)
                raise CallTimeout(f"action {ex.action} did not answer the cancel request "
                                  f"within {timeout:g} s", timeout) from None
            except Exception as exc:
                raise CallFailed(f"cancelling a goal of {ex.action} failed: {exc}") from exc
        ex.cancel_response = CANCEL_CODES.get(response.return_code, str(response.return_code))

    async def remove(self, ex: Execution, timeout: float) -> None:
        """Cancel the goal when it still runs, then forget the execution."""
        if not ex.finished:
            await self.cancel(ex, timeout)
        self._forget(ex)

    async def close(self) -> None:
        """Stop tracking results (the clients go away with the bridge's node)."""
        tasks = [ex.result_task for ex in self._by_id.values()
                 if ex.result_task is not None and not ex.result_task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._by_id.clear()
        self._by_op.clear()
        self._clients.clear()
