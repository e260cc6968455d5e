"""Service calls against a real rclpy server: responses taken on the loop, or by either executor."""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.ros.calls.loop_client import LoopClient
from gateway.ros.calls.services import CallTimeout, NotAvailable, ServiceCaller
from gateway.ros.dds.bridge import RosBridge

with warnings.catch_warnings():  # rclpy's type support loads lark, which imports sre_constants
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

SERVICE = "/replies_test/trigger"
TYPE = "std_srvs/srv/Trigger"
# The DDS topics of the service (rmw_fastrtps names): clients write requests to the first and
# read replies from the second.
REQUEST_TOPIC = f"rq{SERVICE}Request"
REPLY_TOPIC = f"rr{SERVICE}Reply"
REPLY_READERS_BUDGET_S = 20.0


class Server:
    """A Trigger server on its own context; answers `n`, or waits for `gate` when held."""

    def __init__(self, domain: int) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from std_srvs.srv import Trigger

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node("replies_test", context=self.context)
        self.count = 0
        self.held = threading.Event()  # set: callbacks wait for `gate`
        self.gate = threading.Event()
        self.node.create_service(Trigger, SERVICE, self._answer)
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _reply_readers_known(self) -> bool:
        """Every client whose request writer this node knows has its reply reader known too.

        A client's two endpoints share its participant's GUID prefix (the first 12 bytes of a
        gid); counting per participant, not in all, keeps a closed client's reader that DDS has
        not yet forgotten from standing in for another participant's new client."""
        writers = self.node.get_publishers_info_by_topic(REQUEST_TOPIC, no_mangle=True)
        readers = self.node.get_subscriptions_info_by_topic(REPLY_TOPIC, no_mangle=True)
        need = Counter(bytes(w.endpoint_gid[:12]) for w in writers)
        have = Counter(bytes(r.endpoint_gid[:12]) for r in readers)
        return all(have[prefix] >= n for prefix, n in need.items())

    def _answer(self, request: Any, response: Any) -> Any:
        # A request can arrive before DDS told this server of the client's reply reader (a
        # new client on a loaded machine: a client's two endpoints are discovered apart).
        # rmw_fastrtps then waits 100 ms for the match and drops the reply ("failed to send
        # response (timeout)"). So the answer waits until the reader is known.
        deadline = time.monotonic() + REPLY_READERS_BUDGET_S
        while not self._reply_readers_known() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.held.is_set():
            self.gate.wait(10.0)
        self.count += 1
        response.success = True
        response.message = str(self.count)
        return response

    def call_itself(self, n: int) -> int:
        """n calls from a client of this server's own node, 4 at a time; how many answered."""
        from std_srvs.srv import Trigger

        client = self.node.create_client(Trigger, SERVICE)
        answered = 0
        try:
            if not client.wait_for_service(timeout_sec=20.0):
                return 0
            for start in range(0, n, 4):
                futs = [client.call_async(Trigger.Request()) for _ in range(min(4, n - start))]
                for fut in futs:
                    done = threading.Event()
                    fut.add_done_callback(lambda _f, d=done: d.set())
                    if done.wait(20.0) and fut.result() is not None:
                        answered += 1
        finally:
            self.node.destroy_client(client)
        return answered

    def close(self) -> None:
        self.gate.set()
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
        self.thread.join(5.0)


@pytest.fixture(scope="module")
def server(domain: int) -> Iterator[Server]:
    srv = Server(domain)
    yield srv
    srv.close()


async def _first_call(caller: ServiceCaller, request: Any) -> Any:
    """The first answer, retried while discovery has not matched the server yet (busy host)."""
    deadline = asyncio.get_running_loop().time() + 60.0
    while True:
        try:
            return await caller.call(SERVICE, TYPE, request, 20.0)
        except NotAvailable:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)


def _pending(client: Any) -> dict[int, Any]:
    """The requests a client still waits for (its loop table, or rclpy's pending table)."""
    return client.pending if isinstance(client, LoopClient) else client._pending_requests


def _scenario(domain: int, server: Server, executor: str, replies: str) -> None:
    async def run() -> None:
        bridge = RosBridge(f"replies_{executor}_{replies}", domain, executor=executor)
        bridge.start(asyncio.get_running_loop())
        caller = ServiceCaller(bridge, max_in_flight=4, replies=replies)
        try:
            from std_srvs.srv import Trigger

            first = await _first_call(caller, Trigger.Request())
            assert first.success
            client = caller._clients.ready(SERVICE, TYPE)
            assert isinstance(client, LoopClient) == (replies == "loop")
            # 12 calls through a cap of 4: every one answered with its own response, while
            # another client of the service gets answers too (which reach every client's reader)
            bystander = asyncio.ensure_future(asyncio.to_thread(server.call_itself, 40))
            answers: list[Any] = []
            while not answers or not bystander.done():
                answers += await asyncio.gather(*(
                    caller.call(SERVICE, TYPE, Trigger.Request(), 20.0) for _ in range(12)))
            assert len({a.message for a in answers}) == len(answers)
            assert all(a.success for a in answers)
            assert await bystander == 40
            assert _pending(client) == {}
            if replies == "loop":
                assert client.taken >= 13
            else:
                assert bridge.replies is not None and bridge.replies.delivered >= 13
            # a call that runs out of budget leaves nothing pending; its late answer is dropped
            server.held.set()
            with pytest.raises(CallTimeout):
                await caller.call(SERVICE, TYPE, Trigger.Request(), 0.5)
            assert _pending(client) == {}
            server.held.clear()
            server.gate.set()
            after = await caller.call(SERVICE, TYPE, Trigger.Request(), 20.0)
            assert after.success and _pending(client) == {}
            assert caller.limiter.in_flight[SERVICE] == 0
            if replies == "loop":
                assert await _eventually(lambda: client.dropped >= 1)
        finally:
            server.gate.clear()
            caller.close()
            bridge.close()

    asyncio.run(run())


async def _eventually(predicate: Any, budget_s: float = 20.0) -> bool:
    deadline = asyncio.get_running_loop().time() + budget_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@pytest.mark.parametrize(("executor", "replies"),
                         [("events", "loop"), ("events", "executor"), ("single", "loop"),
                          ("single", "executor")])
def test_calls_answer_and_a_timed_out_call_leaves_nothing_pending(
        domain: int, server: Server, executor: str, replies: str) -> None:
    _scenario(domain, server, executor, replies)


def test_an_idle_client_is_closed_and_made_again_on_the_next_call(domain: int,
                                                                   server: Server) -> None:
    """ros.service_client_idle_sec: an unused loop client goes; one in use stays."""
    async def run() -> None:
        from std_srvs.srv import Trigger

        bridge = RosBridge("replies_idle", domain, executor="events")
        bridge.start(asyncio.get_running_loop())
        caller = ServiceCaller(bridge, max_in_flight=4, replies="loop", idle_close_s=0.3)
        try:
            assert (await _first_call(caller, Trigger.Request())).success
            first = caller._clients.ready(SERVICE, TYPE)
            assert isinstance(first, LoopClient)
            # (a first try that found no match yet may have left a client closed before)
            assert await _eventually(lambda: caller._clients.ready(SERVICE, TYPE) is None)
            assert caller.closed_idle >= 1 and caller.health()["loop_clients"] == 0
            # the next call makes a new client (and waits for it to match the server)
            assert (await _first_call(caller, Trigger.Request())).success
            second = caller._clients.ready(SERVICE, TYPE)
            assert isinstance(second, LoopClient) and second is not first
            closed = caller.closed_idle
            # a call that waits for its answer keeps its client, however long it waits
            server.held.set()
            waiting = asyncio.ensure_future(caller.call(SERVICE, TYPE, Trigger.Request(), 20.0))
            assert await _eventually(lambda: bool(second.pending))
            swept = caller.sweeps
            assert await _eventually(lambda: caller.sweeps >= swept + 3)  # idle periods pass
            assert caller.closed_idle == closed
            assert caller._clients.ready(SERVICE, TYPE) is second
            server.gate.set()
            assert (await waiting).success
            assert await _eventually(lambda: caller.closed_idle == closed + 1)
        finally:
            server.held.clear()
            server.gate.clear()
            caller.close()
            bridge.close()

    asyncio.run(run())
