"""Action executions whose result is lost: the goal's real terminal status, and a reason.

The action server in the test process never answers a result request (every response is
dropped, as rmw drops one sent before DDS matched the reply writer to the client's reader),
while its status topic shows how each goal ended. The gateway asks for the result the
documented number of times, then reports the status the status topic showed, saying why no
result came.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

with warnings.catch_warnings():
    # rosidl_generator_py imports lark, which imports the deprecated sre_parse module.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

from rclpy.action import ActionServer, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from test_msgs.action import Fibonacci

from gateway.ros.calls.actions import RESULT_ASKS
from tests.conftest import free_port
from tests.harness import Gateway, enc
from tests.integration.own_node import OwnNode

pytestmark = pytest.mark.integration

OPS = "/apps/result_mute/operations"


class MuteServer(OwnNode):
    """Node `result_mute`: /fib_ok succeeds, /fib_abort aborts; no result response is sent."""

    def __init__(self, domain: int) -> None:
        super().__init__(domain, "result_mute")
        self.asked: dict[str, int] = {"fib_ok": 0, "fib_abort": 0}  # result requests seen
        self.lock = threading.Lock()
        self.servers = [self._server("fib_ok", succeed=True),
                        self._server("fib_abort", succeed=False)]
        self.start(threads=4)

    def _server(self, name: str, succeed: bool) -> ActionServer:
        def execute(goal_handle: Any) -> Any:
            if succeed:
                goal_handle.succeed()
            else:
                goal_handle.abort()
            return Fibonacci.Result(sequence=list(range(goal_handle.request.order)))

        server = ActionServer(self.node, Fibonacci, f"/{name}", execute,
                              goal_callback=lambda _goal: GoalResponse.ACCEPT,
                              callback_group=ReentrantCallbackGroup())

        def drop(header: Any, future: Any) -> None:
            with self.lock:
                self.asked[name] += 1

        server._send_result_response = drop  # type: ignore[method-assign]
        return server


@pytest.fixture(scope="module")
def server(domain: int) -> Iterator[MuteServer]:
    s = MuteServer(domain)
    yield s
    s.close()


@pytest.fixture(scope="module")
def gw(server: MuteServer, domain: int, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("result_lost")
    with Gateway(free_port(), domain, ["api.vendor=vendor"],
                 log_path=tmp / "gateway.log") as g:
        g.wait_for(OPS, lambda b: {"fib_ok", "fib_abort"} <= {i["id"] for i in b["items"]},
                   timeout=60)
        yield g


def _start(gw: Gateway, op: str) -> str:
    resp = gw.request("POST", f"{OPS}/{op}/executions", {"parameters": {"order": 4}})
    assert resp.status == 202, resp
    return f"{OPS}/{op}/executions/{enc(resp.json()['id'])}"


def test_a_lost_result_keeps_the_goals_real_status(gw: Gateway, server: MuteServer) -> None:
    ok, aborted = _start(gw, "fib_ok"), _start(gw, "fib_abort")
    done_ok = gw.wait_for(ok, lambda b: b["status"] != "running", timeout=90)
    done_abort = gw.wait_for(aborted, lambda b: b["status"] != "running", timeout=90)

    xv = done_ok["x-vendor"]
    assert done_ok["status"] == "completed", done_ok
    assert xv["ros2_status"] == "SUCCEEDED", done_ok
    assert "result" not in done_ok, done_ok
    assert "result was lost" in xv["reason"], done_ok
    assert f"asked for {RESULT_ASKS} times" in xv["reason"], done_ok

    assert done_abort["status"] == "failed", done_abort
    assert done_abort["x-vendor"]["ros2_status"] == "ABORTED", done_abort
    assert "result was lost" in done_abort["x-vendor"]["reason"], done_abort
    # the result was requested exactly as often as docs/ros.md says: RESULT_ASKS in all
    with server.lock:
        assert server.asked == {"fib_ok": RESULT_ASKS, "fib_abort": RESULT_ASKS}, server.asked


def test_the_outcome_stays_put(gw: Gateway) -> None:
    """Read again later, a finished execution shows the same status and reason."""
    path = _start(gw, "fib_ok")
    first = gw.wait_for(path, lambda b: b["status"] != "running", timeout=90)
    again = gw.get(path).json()
    assert again["status"] == first["status"] == "completed", again
    assert again["x-vendor"]["reason"] == first["x-vendor"]["reason"], again
