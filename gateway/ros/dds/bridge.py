"""The executor bridge: one rclpy context, node and executor thread; asyncio futures out."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from ..._fast.typegraph import configure as configure_type_limits
from ...errors import not_responding
from ...process.settings import ServerSettings
from ...process.waits import within
from ...settings.config import ConfigError
from ..calls.replies import ReplyHub
from ..graph.census import endpoint_gids, missing, take_census
from ..graph.discovery_info import DiscoveryInfo
from ..graph.discovery_info import attach as attach_discovery_info
from ..interfaces.interface_paths import install
from ..interfaces.message import import_type
from ..rejoin.proxy import REJOIN_GOODBYE_LEAD_S, STOP_GOODBYE_PAUSE_S, NodeProxy, await_goodbye
from ..rejoin.proxy import Joined as _Joined
from ..rejoin.testhooks import install as install_test_hooks
from ..settings import RosSettings
from .ddsprofile import prepare

log = logging.getLogger(__name__)
T = TypeVar("T")
# An idle executor thread wakes this often. New and destroyed entities and shutdown wake it at
# once (rclpy triggers the executor's guard condition), so this only bounds a missed wake.
SPIN_WAKE_S = 1.0
# The same for the wait-set executor: each wake rebuilds its wait set (about 0.4 ms of CPU on
# an idle robot); the EventsExecutor's wakes cost nothing, but its shutdown does not wake it.
WAIT_SET_SPIN_WAKE_S = 10.0
# A rejoin waits this long at most for its new participant to discover the graph.
REJOIN_DISCOVERY_S = 2.0
# ... and, once it has, this long at most for their endpoints.
REJOIN_ENDPOINTS_S = 6.0


def start_ros(settings: Any) -> RosBridge:
    """The ROS bridge (rclpy context, DDS participant, nodes) for the gateway's settings:
    discovery runs from here on.

    serve() makes it before the app is built, so DDS discovery overlaps building the routes;
    it reaches the app as `state.bridge`.
    """
    ros = settings.typed(RosSettings.from_settings)
    log.info("DDS: %s", prepare(ros.dds_match_types_by_name))

    try:
        install(ros.interface_paths)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    configure_type_limits(ros)  # caps on what type descriptions may ask for
    bridge = RosBridge(ros.node_name, ros.domain_id,
                       settings.typed(ServerSettings.from_settings).executor_threads, ros.executor)
    bridge.rejoin_enabled = ros.rejoin_enabled
    bridge.rejoin_min_interval_s = ros.rejoin_min_interval_sec
    return bridge


class RosBridge:
    """Owns every ROS object; nothing on the event loop ever blocks on ROS."""

    def __init__(self, node_name: str, domain_id: int, graph_threads: int = 4,
                 executor: str = "events") -> None:
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        self._node_name, self._domain_arg, self._executor_kind = node_name, domain_id, executor
        joined = self._join()
        self.context = joined.context
        self.created = time.monotonic()  # the DDS participant exists: discovery runs from here
        self.domain_id = self.context.get_domain_id()
        # Components hold these proxies: a rejoin (ros/rejoin/proxy.py) moves what they made to
        # new nodes.
        self.node: Any = NodeProxy(joined.node)
        # Our own reading of ros_discovery_info: graph polls through this node name the nodes
        # the rmw cannot (Humble participants, participants back from a lost lease).
        self.discovery_info: DiscoveryInfo | None = attach_discovery_info(self.node)
        self.closers: list[Callable[[], None]] = []
        # Service and action clients: with ros.executor=events on a second node of the same
        # context (one DDS participant) spun by rclpy's EventsExecutor, which keeps no wait
        # set to rebuild per response: about half the CPU per call (bench/ops.py). It cannot
        # run the two-argument (message info) callbacks of the sample pool, hence two nodes.
        self.call_node: Any = self.node if joined.call_node is None else NodeProxy(
            joined.call_node)
        self._joined = joined
        self.client_caches: weakref.WeakSet[ClientCache] = weakref.WeakSet()
        self._rejoin_hooks: list[Callable[[], None]] = []
        self.rejoin_enabled = True
        self.rejoin_min_interval_s = 5.0
        self.rejoins = 0
        self.hearing: Any = None  # the hearing check (ros/rejoin/hearing_loop.py), when it runs
        self.sample_pool: Any = None  # the SamplePool (ros/topics/pool.py): receive times
        self.test_hooks: Any = None  # ros/rejoin/testhooks.py, with DIAG_GATEWAY_TEST_HOOKS=1 only
        self._rejoining: asyncio.Future[float] | None = None
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=graph_threads, thread_name_prefix="ros-graph"
        )
        self.loop: asyncio.AbstractEventLoop | None = None
        self.replies: ReplyHub | None = None  # service responses to the loop (ros/calls/replies.py)
        self.tasks_completed = 0
        self.tasks_failed = 0
        self.last_task_latency_us = 0
        self.max_task_latency_us = 0
        self.queue_max_depth_observed = 0
        self.queue_dropped = 0  # queued tasks given up (timed out) before a worker took them
        self.watchdog_trips = 0  # tasks that overran their time budget
        self._running: dict[int, float] = {}  # task number -> perf_counter start, while running
        self._task_seq = 0
        self._closed = False

    def _join(self) -> _Joined:
        """A new rclpy context (one DDS participant) with the gateway's nodes and executors."""
        joined = self._context()
        self._add_nodes(joined)
        return joined

    def _context(self) -> _Joined:
        """A new rclpy context: its DDS participant comes with its first node."""
        context = rclpy.Context()
        kwargs: dict[str, Any] = {
            "context": context,
            # The gateway's asyncio loop owns SIGINT/SIGTERM, not rclpy.
            "signal_handler_options": SignalHandlerOptions.NO,
        }
        if self._domain_arg >= 0:
            kwargs["domain_id"] = self._domain_arg
        rclpy.init(**kwargs)
        return _Joined(context)

    def _add_nodes(self, joined: _Joined) -> None:
        """The gateway's node(s) in the context, each with its executor and thread."""
        context = joined.context
        # No ~/get_type_description service: the gateway publishes only types that other
        # nodes describe, and each service holds a DDS reader and writer (0.2 MiB per node).
        no_type_service = [Parameter("start_type_description_service", value=False)]
        joined.node = rclpy.create_node(
            self._node_name, context=context, start_parameter_services=False,
            parameter_overrides=no_type_service,
        )
        # One thread: every callback only hands data to asyncio, and a thread pool costs a
        # task hand-off per callback (measured slower for service calls and data reads).
        joined.executor = SingleThreadedExecutor(context=context)
        joined.executor.add_node(joined.node)
        joined.thread = threading.Thread(target=self._spin, args=(joined, joined.executor),
                                         name="ros-executor", daemon=True)
        if self._executor_kind == "events":
            from rclpy.experimental import (  # noqa: PLC0415 - only for the events executor
                EventsExecutor,
            )

            joined.call_node = rclpy.create_node(
                self._node_name + "_calls", context=context, start_parameter_services=False,
                parameter_overrides=no_type_service)
            joined.call_executor = EventsExecutor(context=context)
            joined.call_executor.add_node(joined.call_node)
            joined.call_thread = threading.Thread(
                target=self._spin, args=(joined, joined.call_executor), name="ros-calls",
                daemon=True)

    @property
    def executor(self) -> Any:
        """The executor spinning the gateway node now."""
        return self._joined.executor

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start spinning; results are handed to this loop."""
        self.loop = loop
        self.replies = ReplyHub(loop)
        self._joined.start()

        self.test_hooks = install_test_hooks(self, loop)

    def _spin(self, joined: _Joined, executor: Any) -> None:
        try:
            while joined.context.ok() and not self._closed and not joined.retired:
                executor.spin_once(timeout_sec=WAIT_SET_SPIN_WAKE_S if isinstance(
                    executor, SingleThreadedExecutor) else SPIN_WAKE_S)
        except (ExternalShutdownException, rclpy.executors.ShutdownException):
            pass
        except Exception:  # the executor must never die silently
            log.exception("ROS executor thread stopped")

    @property
    def alive(self) -> bool:
        """True while the executor threads spin."""
        return self._joined.alive

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None,
                  what: str = "ROS graph query") -> T:
        """Run blocking ROS work on the graph pool; 504 not-responding past timeout."""
        assert self.loop is not None
        start = time.perf_counter()
        self._task_seq += 1
        seq, started = self._task_seq, threading.Event()

        def task() -> T:
            started.set()
            self._running[seq] = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self._running.pop(seq, None)

        fut = self.loop.run_in_executor(self._pool, task)
        self.queue_max_depth_observed = max(self.queue_max_depth_observed,
                                            self._pool._work_queue.qsize())
        try:
            result = await within(fut, timeout) if timeout else await fut
        except asyncio.TimeoutError:
            self.tasks_failed += 1
            self.watchdog_trips += 1
            if not started.is_set():
                self.queue_dropped += 1
            raise not_responding(f"{what} did not finish within {timeout:g} s") from None
        except Exception:
            self.tasks_failed += 1
            raise
        self._account(start)
        return result

    async def drop_subscription(self, sub: Any, topic: str) -> None:
        """Destroy a subscription of the gateway node (failures only logged)."""
        if sub is None:
            return
        try:
            await self.run(self.node.destroy_subscription, sub, timeout=2.0)
        except Exception:
            log.debug("destroy %s subscription", topic, exc_info=True)

    def _account(self, start: float) -> None:
        us = int((time.perf_counter() - start) * 1e6)
        self.tasks_completed += 1
        self.last_task_latency_us = us
        self.max_task_latency_us = max(self.max_task_latency_us, us)

    def wrap_future(self, rfut: Any) -> asyncio.Future[Any]:
        """An asyncio future completed (thread-safely) when the rclpy future completes."""
        assert self.loop is not None
        loop = self.loop
        afut: asyncio.Future[Any] = loop.create_future()

        def _done(f: Any) -> None:
            def _set() -> None:
                if afut.done():
                    return
                exc = f.exception()
                if exc is not None:
                    afut.set_exception(exc)
                elif f.cancelled():
                    afut.cancel()
                else:
                    afut.set_result(f.result())

            try:
                loop.call_soon_threadsafe(_set)
            except RuntimeError:  # the loop closed: nobody waits; nothing may raise into rclpy
                pass

        rfut.add_done_callback(_done)
        return afut

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule fn(*args) on the event loop from any thread."""
        assert self.loop is not None
        self.loop.call_soon_threadsafe(fn, *args)

    def on_rejoin(self, callback: Callable[[], None]) -> None:
        """Call `callback` on the event loop at each rejoin, before the old nodes go: for
        ROS objects a component made outside the node proxies (they must be made anew)."""
        self._rejoin_hooks.append(callback)

    async def rejoin(self) -> float:
        """Re-join DDS with a new participant: new context, nodes and executors; every
        subscription, publisher and service server moves there; client caches are cleared;
        the old context is shut down. Seconds until the new participant served. A caller
        while a rejoin runs (the frozen-participant check, the hearing check, a test hook)
        shares that one."""
        if self._rejoining is None or self._rejoining.done():
            self._rejoining = asyncio.ensure_future(self._rejoin())
        return await asyncio.shield(self._rejoining)

    async def _rejoin(self) -> float:
        start = time.perf_counter()
        old = self._joined
        new = await self.run(self._prepare_rejoin, timeout=30.0, what="re-joining DDS")
        for cache in list(self.client_caches):
            cache.clear()
        for hook in self._rejoin_hooks:  # before the old nodes go
            try:
                hook()
            except Exception:
                log.exception("rejoin hook %r", hook)
        prepared = time.perf_counter()
        await self.run(self._move, old, new, timeout=30.0, what="re-joining DDS")
        moved = time.perf_counter()
        self.rejoins += 1
        names = tuple(n.get_name() for n in (new.node, new.call_node) if n is not None)
        await self.run(await_goodbye, new.node, names, timeout=30.0,
                       what="closing the old DDS participant")
        await asyncio.sleep(REJOIN_GOODBYE_LEAD_S)  # the old one is stopped: nothing waits
        await self.run(old.shutdown, timeout=30.0, what="closing the old DDS participant")
        log.info("rejoin: new participant %.3f s, entities moved %.3f s, old one closed %.3f s",
                 prepared - start, moved - prepared, time.perf_counter() - moved)
        if self.hearing is not None:  # what made it deaf is checked again (rejoin/hearing_loop.py)
            self.hearing.rejoined()
        return moved - start

    def _prepare_rejoin(self) -> _Joined:
        """A new participant (through a probe node) that has discovered the graph; the old
        executors stopped."""
        before = len(take_census(self.node).participants)
        new = self._context()
        # The gateway's own node names stay registered for /rosout until the old nodes go:
        # the probe makes the participant; the gateway's nodes are made once they are gone.
        new.probe = rclpy.create_node(self._node_name + "_rejoin", context=new.context,
                                      start_parameter_services=False, enable_rosout=False,
                                      parameter_overrides=[Parameter(
                                          "start_type_description_service", value=False)])
        # Let it discover the others first (the old participant included, hence more than
        # before) and their endpoints (a node listed without its topics would answer 404 for
        # them), so the graph polls do not see the robot vanish (bounded).
        known = endpoint_gids(self.node)
        lacking = len(known)
        start = time.monotonic()
        while time.monotonic() - start < REJOIN_ENDPOINTS_S:
            census = take_census(new.probe)
            if len(census.participants) > before and \
                    len(census.with_nodes) >= len(census.participants) - 1:
                # endpoints of participants it has not discovered (a frozen or gone process)
                # are not waited for
                lacking = missing(known, endpoint_gids(new.probe), census.participants)
                if not lacking:
                    break
            elif time.monotonic() - start >= REJOIN_DISCOVERY_S:
                break  # a participant is not there (frozen or gone): as good as it gets
            time.sleep(0.05)
        else:
            log.warning("rejoin: the new participant had not discovered the graph's endpoints "
                        "within %.0f s (%d missing); it goes on", REJOIN_ENDPOINTS_S, lacking)
        self._joined.stop()  # no callback runs on an old entity from here on
        return new

    def _move(self, old: _Joined, new: _Joined) -> None:
        """Move the proxies' entities from the old nodes to new ones in the new context."""
        proxies = [self.node] if self.call_node is self.node else [self.node, self.call_node]
        for proxy in proxies:
            proxy.lock.acquire()
        failed = 0
        try:
            for proxy in proxies:  # graph queries meanwhile go to the new participant
                proxy.point_to(new.probe)
            if self.discovery_info is not None:  # its raw reader is the old node's
                self.discovery_info.close()
            old.destroy()
            self._add_nodes(new)
            failed += self.node.move(new.node)
            if self.call_node is not self.node:
                failed += self.call_node.move(new.call_node)
            if self.discovery_info is not None:
                self.discovery_info.reopen()
        finally:
            for proxy in proxies:
                proxy.lock.release()
        self._joined = new
        self.context = new.context
        if self.loop is not None:
            new.start()
        try:
            new.probe.destroy_node()
        except Exception:
            log.debug("probe node destroy", exc_info=True)
        new.probe = None
        if failed:
            log.warning("rejoin: %d ROS entities could not be re-created", failed)

    def health(self) -> dict[str, Any]:
        """Figures for /health's subscription-executor block."""
        return {
            "worker_alive": self.alive,
            "degraded": not self.alive,
            "queue_depth": self._pool._work_queue.qsize(),
            "queue_max_depth_observed": self.queue_max_depth_observed,
            "queue_dropped": self.queue_dropped,
            "tasks_completed": self.tasks_completed,
            "tasks_failed": self.tasks_failed,
            "last_task_latency_us": self.last_task_latency_us,
            "max_task_latency_us": self.max_task_latency_us,
            "current_task_age_ms": self._oldest_task_age_ms(),
            "watchdog_trips": self.watchdog_trips,
        }

    def _oldest_task_age_ms(self) -> int:
        """Age of the longest-running graph task, 0 when the pool is idle."""
        starts = list(self._running.values())
        return int((time.perf_counter() - min(starts)) * 1000) if starts else 0

    def close(self) -> None:
        """Stop the executor, join its thread, shut the context down."""
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._joined.stop()
        if self.discovery_info is not None:
            self.discovery_info.close()
        for closer in self.closers:  # DDS entities made outside rclpy, before their node goes
            try:
                closer()
            except Exception:
                log.debug("closer", exc_info=True)
        self._joined.shutdown(STOP_GOODBYE_PAUSE_S)

class ClientCache:
    """ROS clients created once per (name, type) off the event loop, on the bridge's call node;
    a failed creation is forgotten so the next caller retries."""

    def __init__(self, bridge: RosBridge) -> None:
        self.bridge = bridge
        caches = getattr(bridge, "client_caches", None)
        if caches is not None:  # cleared at a rejoin: the clients go with the old node
            caches.add(self)
        self._clients: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self._ready: dict[tuple[str, str], Any] = {}  # clients made: no future to inspect

    def ready(self, name: str, type_name: str) -> Any:
        """The client for name when it was made already, else None."""
        return self._ready.get((name, type_name))

    def made(self) -> list[tuple[str, Any]]:
        """(name, client) of every client made so far."""
        return [(name, client) for (name, _type), client in self._ready.items()]

    async def get(self, name: str, type_name: str, factory: Callable[..., Any],
                  what: str) -> Any:
        """The client for name, made with factory(node, msg_class, name) on first use."""
        key = (name, type_name)
        fut = self._clients.get(key)
        if fut is not None and fut.done() and not fut.cancelled() and fut.exception() is None:
            return fut.result()[0]
        if fut is None:
            cls = import_type(type_name)
            fut = self._clients[key] = asyncio.ensure_future(
                self.bridge.run(self._make, factory, cls, name, what=what))
        try:
            client, moves = await asyncio.shield(fut)
        except Exception:
            if self._clients.get(key) is fut:
                del self._clients[key]
            raise
        if moves != self._moves():  # made on a node a rejoin has since replaced
            if self._clients.get(key) is fut:
                del self._clients[key]
            return await self.get(name, type_name, factory, what)
        if self._clients.get(key) is fut:
            self._ready[key] = client
        return client

    def _moves(self) -> int:
        return int(getattr(self.bridge.call_node, "moves", 0))

    def _make(self, factory: Callable[..., Any], cls: Any, name: str) -> tuple[Any, int]:
        """factory(node, cls, name) with no rejoin moving the node meanwhile (graph pool)."""
        proxy = self.bridge.call_node
        locked = getattr(proxy, "locked", None)
        if locked is None:  # a plain node (tests)
            return factory(proxy, cls, name), 0
        return locked(lambda _node: (factory(proxy, cls, name), proxy.moves))

    def discard(self, client: Any) -> None:
        """Forget one client (closed by its owner): the next caller makes a new one."""
        for key in [k for k, c in self._ready.items() if c is client]:
            del self._ready[key]
            self._clients.pop(key, None)

    def clear(self) -> None:
        """Forget every client (they are destroyed with the bridge's node)."""
        self._clients.clear()
        self._ready.clear()
