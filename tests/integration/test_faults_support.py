"""Helpers of the fault integration tests: an rclpy side in the test process, an SSE reader.

(No tests here; the module is imported by the test_faults_* modules.)
"""

from __future__ import annotations

import queue
import signal
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

with warnings.catch_warnings():
    # rosidl_generator_py imports lark, which imports the deprecated sre_parse module.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from gateway.faults.reporter import FaultReporter, LocalFilter
from tests.harness import Gateway
from tests.sse_client import SseClient


class RosSide:
    """A private rclpy context with an executor thread; nodes made here spin at once."""

    def __init__(self, domain: int) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self.nodes: list[Node] = []
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except Exception:  # shutdown races
            pass

    def node(self, name: str, namespace: str = "/") -> Node:
        """A new node on this side's executor."""
        node = Node(name, namespace=namespace, context=self.context)
        self.executor.add_node(node)
        self.nodes.append(node)
        return node

    def reporter(self, node: Node, **kw: Any) -> FaultReporter:
        """A FaultReporter for node (fast retries, unfiltered unless a filter is given)."""
        kw.setdefault("retry_interval_sec", 0.3)
        kw.setdefault("local_filter", LocalFilter(enabled=False))
        return FaultReporter(node, **kw)

    def call(self, node: Node, srv_type: Any, name: str, request: Any,
             timeout: float = 10.0) -> Any:
        """Call a service and return the response (raises on timeout)."""
        client = node.create_client(srv_type, name)
        deadline = time.monotonic() + timeout
        while not client.service_is_ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"service {name} not available")
            time.sleep(0.05)
        future = client.call_async(request)
        while not future.done():
            if time.monotonic() > deadline:
                client.remove_pending_request(future)
                raise TimeoutError(f"service {name} did not answer")
            time.sleep(0.02)
        node.destroy_client(client)
        return future.result()

    def set_parameter(self, node: Node, target: str, name: str, value: float) -> None:
        """Set a double parameter of another node."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters

        req = SetParameters.Request(parameters=[Parameter(
            name=name, value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE,
                                            double_value=value))])
        res = self.call(node, SetParameters, f"{target}/set_parameters", req)
        assert all(r.successful for r in res.results), res

    def close(self) -> None:
        """Destroy the nodes and shut the context down."""
        self.executor.shutdown(timeout_sec=2.0)
        for node in self.nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self._thread.join(timeout=5.0)


def wait_until(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    """Poll predicate until it returns a truthy value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def faults_by_code(gw: Gateway, path: str = "/faults", query: str = "") -> dict[str, Any]:
    """The items of a fault list keyed by code."""
    resp = gw.get(path + query)
    assert resp.status == 200, resp
    return {item["fault_code"]: item for item in resp.json()["items"]}


def kill_gateway(gw: Gateway) -> None:
    """SIGKILL the gateway process (no cleanup runs)."""
    assert gw.proc is not None
    gw.proc.send_signal(signal.SIGKILL)
    gw.proc.wait(10)


class SseReader(SseClient):
    """A real HTTP client on the fault stream; events arrive in a queue from a thread."""

    def __init__(self, gw: Gateway, last_event_id: int | None = None) -> None:
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        super().__init__(gw.port, "/api/v1/faults/stream", headers, timeout=30)
        self.events = self.frames

    def next(self, predicate: Callable[[dict[str, Any]], bool] = lambda e: True,
             timeout: float = 20.0) -> dict[str, Any]:
        """The next event satisfying predicate (others are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no matching fault stream event in time")
            try:
                event = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if predicate(event):
                return event


def write_yaml(path: Path, text: str) -> str:
    """Write a YAML file and return its path as a string."""
    path.write_text(text)
    return str(path)
