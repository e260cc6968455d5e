"""Service calls through the bridge's reply slots against a real rclpy server, both executors."""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.ros.bridge import RosBridge
from gateway.ros.services import CallTimeout, NotAvailable, ServiceCaller

with warnings.catch_warnings():  # rclpy's type support loads lark, which imports sre_constants
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

SERVICE = "/replies_test/trigger"
TYPE = "std_srvs/srv/Trigger"


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

    def _answer(self, request: Any, response: Any) -> Any:
        if self.held.is_set():
            self.gate.wait(10.0)
        self.count += 1
        response.success = True
        response.message = str(self.count)
        return response

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


def _scenario(domain: int, server: Server, executor: str) -> None:
    async def run() -> None:
        bridge = RosBridge(f"replies_{executor}", domain, executor=executor)
        bridge.start(asyncio.get_running_loop())
        caller = ServiceCaller(bridge, max_in_flight=4)
        try:
            from std_srvs.srv import Trigger

            first = await _first_call(caller, Trigger.Request())
            assert first.success
            client = caller._clients.ready(SERVICE, TYPE)
            # 12 calls through a cap of 4: every one answered with its own response
            answers = await asyncio.gather(*(caller.call(SERVICE, TYPE, Trigger.Request(), 20.0)
                                             for _ in range(12)))
            assert len({a.message for a in answers}) == 12 and all(a.success for a in answers)
            assert client._pending_requests == {}
            assert bridge.replies is not None and bridge.replies.delivered >= 13
            # a call that runs out of budget leaves nothing pending; its late answer is dropped
            server.held.set()
            with pytest.raises(CallTimeout):
                await caller.call(SERVICE, TYPE, Trigger.Request(), 0.5)
            assert client._pending_requests == {}
            server.held.clear()
            server.gate.set()
            after = await caller.call(SERVICE, TYPE, Trigger.Request(), 20.0)
            assert after.success and client._pending_requests == {}
            assert caller.limiter.in_flight[SERVICE] == 0
        finally:
            server.gate.clear()
            caller.close()
            bridge.close()

    asyncio.run(run())


@pytest.mark.parametrize("executor", ["events", "single"])
def test_calls_answer_and_a_timed_out_call_leaves_nothing_pending(
        domain: int, server: Server, executor: str) -> None:
    _scenario(domain, server, executor)
