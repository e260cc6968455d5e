"""Action executions: a terminal status is shown only together with its result.

The action server in the test process marks each goal succeeded, then returns its result
a moment later (so the status topic runs well ahead of the result response, as it does by a
few milliseconds on any server); every poll of every goal must see either `running` or
`completed` with the result, never `completed` without it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

with warnings.catch_warnings():
    # rosidl_generator_py imports lark, which imports the deprecated sre_parse module.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

from rclpy.action import ActionServer, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from test_msgs.action import Fibonacci

from tests.conftest import free_port
from tests.harness import Gateway, enc
from tests.integration.own_node import OwnNode

pytestmark = pytest.mark.integration

RESULT_LAG_S = 0.4
GOALS = 16
PATH = "/apps/result_lag/operations/fib/executions"


class LaggingServer(OwnNode):
    """Node `result_lag` serving /fib: feedback, SUCCEEDED, then the result RESULT_LAG_S later."""

    def __init__(self, domain: int) -> None:
        super().__init__(domain, "result_lag")
        self.server = ActionServer(self.node, Fibonacci, "/fib", self._execute,
                                   goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                   callback_group=ReentrantCallbackGroup())
        # /fib_lossy: the first result response of every goal is lost (as rmw drops one sent
        # before DDS matched the reply writer to the client's reader)
        self.lossy = ActionServer(self.node, Fibonacci, "/fib_lossy", self._execute,
                                  goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                  callback_group=ReentrantCallbackGroup())
        self.dropped = 0
        answered: set[int] = set()  # the goals' result futures whose first response was lost
        send = self.lossy._send_result_response

        def lose_first(header: Any, future: Any) -> None:
            if id(future) not in answered:
                answered.add(id(future))
                self.dropped += 1
                return
            send(header, future)

        self.lossy._send_result_response = lose_first  # type: ignore[method-assign]
        self.start(threads=GOALS + 2)

    def _execute(self, goal_handle: Any) -> Any:
        order = goal_handle.request.order
        feedback = Fibonacci.Feedback(sequence=[0, 1, -1])
        goal_handle.publish_feedback(feedback)
        time.sleep(0.05)
        goal_handle.succeed()
        time.sleep(RESULT_LAG_S)
        return Fibonacci.Result(sequence=list(range(order)))


@pytest.fixture(scope="module")
def server(domain: int) -> Iterator[LaggingServer]:
    s = LaggingServer(domain)
    yield s
    s.close()


@pytest.fixture(scope="module")
def gw(server: LaggingServer, domain: int, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("actions")
    with Gateway(free_port(), domain, ["api.vendor=vendor"],
                 log_path=tmp / "gateway.log") as g:
        g.wait_for("/apps/result_lag/operations",
                   lambda b: any(i["id"] == "fib" for i in b["items"]), timeout=60)
        yield g


def _follow(gw: Gateway, order: int) -> list[dict[str, Any]]:
    """Start one goal and poll it until it is no longer running; every body seen."""
    resp = gw.request("POST", PATH, {"parameters": {"order": order}})
    assert resp.status == 202, resp
    exec_id = resp.json()["id"]
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = gw.get(f"{PATH}/{enc(exec_id)}").json()
        seen.append(body)
        if body["status"] != "running":
            return seen
        time.sleep(0.01)
    raise AssertionError(f"goal {exec_id} still running after 30 s")


def test_terminal_status_only_with_its_result(gw: Gateway) -> None:
    with ThreadPoolExecutor(GOALS) as pool:
        runs = list(pool.map(lambda n: _follow(gw, n + 2), range(GOALS)))
    for order, seen in enumerate(runs, start=2):
        final = seen[-1]
        assert final["status"] == "completed", final
        for body in seen:
            if body["status"] != "running":
                assert body["result"] == {"sequence": list(range(order))}, body
                assert body["parameters"] == body["result"], body
                assert body["x-vendor"]["ros2_status"] == "SUCCEEDED", body
            else:
                assert body["x-vendor"]["ros2_status"] != "SUCCEEDED", body
    # the goals were polled during the lag: each saw the feedback while still running
    assert all(any(b.get("parameters") == {"sequence": [0, 1, -1]} for b in seen)
               for seen in runs)


def test_a_lost_result_response_is_asked_for_again(gw: Gateway, server: LaggingServer) -> None:
    """The goal ended (status topic) and its result response was lost: the gateway asks for
    the result again and shows it, rather than a goal running for ever."""
    path = "/apps/result_lag/operations/fib_lossy/executions"
    gw.wait_for("/apps/result_lag/operations",
                lambda b: any(i["id"] == "fib_lossy" for i in b["items"]), timeout=60)
    resp = gw.request("POST", path, {"parameters": {"order": 5}})
    assert resp.status == 202, resp
    done = gw.wait_for(f"{path}/{enc(resp.json()['id'])}",
                       lambda b: b["status"] != "running", timeout=60)
    assert done["status"] == "completed", done
    assert done["result"] == {"sequence": [0, 1, 2, 3, 4]}, done
    assert server.dropped >= 1

