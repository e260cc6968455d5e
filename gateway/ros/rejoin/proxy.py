"""The gateway's ROS nodes behind proxies that can move to a new DDS participant.

Every subscription, publisher and service server made through a NodeProxy is recorded with
its creation arguments behind an EntityHandle; RosBridge.rejoin (ros/dds/bridge.py) makes new
nodes in a new rclpy context (a new DDS participant) and NodeProxy.move replays them there,
with the same callbacks, so components keep their handles. Service and action clients are not
replayed: their owners cache them (bridge.ClientCache) and the bridge clears the caches, so the
next call makes a new one; a call pending on an old client fails like any lost call.

Anything else made on a proxy's node (clients, timers, guard conditions) is made under the
proxy's lock (`NodeProxy.locked`): a move holds that lock from the moment graph queries go to
the new participant until the new nodes are in place, so nothing is ever made on an old node
after it was destroyed (such an entity would hold the old node, and with it the whole old
participant, for the life of the process).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger(__name__)
# How long a rejoin waits for the old participant's last node list (no nodes) to reach the
# new participant before the old one goes (see await_goodbye), and how long that list then
# leads the goodbye at least: the new participant, in this process, gets it at once, other
# processes' graphs a little later.
GOODBYE_WAIT_S = 1.0
GOODBYE_POLL_S = 0.02
REJOIN_GOODBYE_LEAD_S = 1.0
# At the gateway's stop there is no participant of its own left to see the last list arrive:
# it leads the goodbye by this long (a stop should not wait long).
STOP_GOODBYE_PAUSE_S = 0.2
REPLAYED = ("create_subscription", "create_publisher", "create_service")
DESTROY = {"destroy_subscription": "create_subscription",
           "destroy_publisher": "create_publisher", "destroy_service": "create_service"}


class EntityHandle:
    """A ROS entity of a NodeProxy: attribute access goes to the entity of the current node."""

    def __init__(self, entity: Any, kind: str, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        self._entity = entity
        self._kind = kind
        self._args = args
        self._kwargs = kwargs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._entity, name)

    def __repr__(self) -> str:
        return f"EntityHandle({self._entity!r})"


def unwrap(entity: Any) -> Any:
    """The rclpy entity behind a handle (anything else as it is)."""
    return entity._entity if type(entity) is EntityHandle else entity


class NodeProxy:
    """An rclpy node whose subscriptions, publishers and services can move to another node."""

    def __init__(self, node: Any) -> None:
        self._node = node
        self._handles: list[EntityHandle] = []
        self.lock = threading.RLock()  # creation and destruction against a move
        self.moves = 0  # node changes so far: what was made before one is on an old node

    @property
    def current(self) -> Any:
        """The rclpy node behind the proxy now."""
        return self._node

    def __getattr__(self, name: str) -> Any:
        if name in DESTROY:
            return lambda entity: self._destroy(name, entity)
        if name in REPLAYED:
            return lambda *args, **kwargs: self._create(name, args, kwargs)
        if name.startswith("create_"):  # a client, timer, guard condition: not replayed
            return lambda *args, **kwargs: self.locked(
                lambda node: getattr(node, name)(*args, **kwargs))
        return getattr(self._node, name)

    def locked(self, make: Any) -> Any:
        """make(current node) with no move meanwhile (blocking: call it off the loop)."""
        with self.lock:
            return make(self._node)

    def _create(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> EntityHandle:
        with self.lock:
            handle = EntityHandle(getattr(self._node, kind)(*args, **kwargs), kind, args, kwargs)
            self._handles.append(handle)
            return handle

    def _destroy(self, name: str, entity: Any) -> Any:
        with self.lock:
            if type(entity) is EntityHandle:
                try:
                    self._handles.remove(entity)
                except ValueError:
                    pass
            return getattr(self._node, name)(unwrap(entity))

    @property
    def replayed(self) -> int:
        """Entities recorded for a move."""
        return len(self._handles)

    def point_to(self, node: Any) -> None:
        """Make `node` the current node without moving anything (graph queries during a move)."""
        with self.lock:
            self._node = node

    def move(self, node: Any) -> int:
        """Re-create every recorded entity on `node` and make it the current node; the number
        that could not be re-created (logged; their handles keep the old entity)."""
        failed = 0
        with self.lock:
            self._node = node
            self.moves += 1
            for handle in self._handles:
                try:
                    handle._entity = getattr(node, handle._kind)(*handle._args,
                                                                 **handle._kwargs)
                except Exception:
                    failed += 1
                    log.exception("rejoin: cannot re-create %s %s", handle._kind,
                                  handle._args[1] if len(handle._args) > 1 else "")
        return failed


def destroy_waitables(node: Any) -> int:
    """Destroy the waitables of a node (action clients); how many.

    Node.destroy_node leaves them: an action client's handle holds the node's, so the node
    stayed, and with it the rmw context's node count and the whole DDS participant (its ~8
    threads, its `_diag_gateway_calls` still announced) at every rejoin after a goal.
    """
    from rclpy.event_handler import EventHandler  # noqa: PLC0415 - rclpy only once ROS runs

    destroyed = 0
    for waitable in list(getattr(node, "waitables", ())):
        if isinstance(waitable, EventHandler):
            continue  # a publisher's or subscription's: destroyed with it
        destroy = getattr(waitable, "destroy", None)
        try:
            if destroy is not None:
                destroy()
            else:
                node.remove_waitable(waitable)
            destroyed += 1
        except Exception:
            log.debug("waitable destroy", exc_info=True)
    return destroyed


def await_goodbye(node: Any, names: tuple[str, ...], budget_s: float = GOODBYE_WAIT_S) -> bool:
    """Wait (blocking, up to budget_s) until `node`'s graph lists each of `names` once: the
    old participant's last node list, with its nodes gone, has arrived. True when it did.

    A participant's node lists and its own removal reach the others on different paths
    (ros_discovery_info samples, taken by the rmw's listener thread; the discovery protocol's
    goodbye, handled at once). When the goodbye overtakes the last list on a loaded host, a
    ROS graph keeps the old nodes for good (the late list re-adds the participant), and
    `ros2 node list` shows the gateway twice. Closing the participant only once its empty
    list has gone out (the new participant, on this host, has it) leaves that list first.
    """
    deadline = time.monotonic() + budget_s
    while True:
        try:
            listed = [n for n in node.get_node_names() if n in names]
        except Exception:
            log.debug("rejoin: listing nodes", exc_info=True)
            return False
        if sorted(listed) == sorted(names):
            return True
        if time.monotonic() >= deadline:
            log.info("rejoin: the old participant's nodes still listed after %.1f s (%s); "
                     "closing it", budget_s, ", ".join(sorted(listed)))
            return False
        time.sleep(GOODBYE_POLL_S)


class Joined:
    """One rclpy context (a DDS participant) with the gateway's nodes, executors and threads."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.node: Any = None
        self.executor: Any = None
        self.thread: threading.Thread | None = None
        self.call_node: Any = None  # with ros.executor=events: the client node
        self.call_executor: Any = None
        self.call_thread: threading.Thread | None = None
        self.probe: Any = None  # a rejoin's first node (the participant before the nodes)
        self.retired = False  # its threads stop spinning

    def start(self) -> None:
        """Start the executor threads."""
        for thread in (self.thread, self.call_thread):
            if thread is not None:
                thread.start()

    @property
    def alive(self) -> bool:
        """True while the executor threads spin."""
        return all(t is None or t.is_alive() for t in (self.thread, self.call_thread))

    def stop(self) -> None:
        """Stop the executors and join their threads (callbacks end here)."""
        self.retired = True
        for executor, thread in ((self.executor, self.thread),
                                 (self.call_executor, self.call_thread)):
            if executor is None:
                continue
            try:
                executor.shutdown(timeout_sec=2.0)
            except Exception:
                log.debug("executor shutdown", exc_info=True)
            if thread is not None and thread.is_alive():
                thread.join(timeout=3.0)

    def destroy(self) -> None:
        """Destroy the nodes (and every entity on them, waitables included)."""
        nodes, self.node, self.call_node = (self.call_node, self.node), None, None
        for node in nodes:
            if node is None:
                continue
            destroy_waitables(node)
            try:
                node.destroy_node()
            except Exception:
                log.debug("node destroy", exc_info=True)

    def shutdown(self, goodbye_pause_s: float = 0.0) -> None:
        """Shut the context down (its DDS participant goes with its last node); with a pause,
        the participant's last node list (no nodes) leads its goodbye by that long, so that
        other graphs take it first (await_goodbye)."""
        import rclpy  # noqa: PLC0415 - rclpy only once ROS runs

        had_nodes = self.node is not None or self.call_node is not None
        self.destroy()
        if had_nodes and goodbye_pause_s > 0:
            time.sleep(goodbye_pause_s)
        rclpy.try_shutdown(context=self.context)
