"""Two servers of one action (and of one service) on the graph: the gateway keeps serving.

Two processes serving one name is a real misconfiguration (a node launched twice). Each
server answers every request, so the gateway's client gets two answers to one goal request,
one cancel and one result request: it takes the first and must survive the others, whatever
the client node's executor.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

with warnings.catch_warnings():
    # rosidl_generator_py imports lark, which imports the deprecated sre_parse module.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from std_srvs.srv import Trigger
from test_msgs.action import Fibonacci

from tests.conftest import free_port
from tests.harness import Gateway, enc
from tests.integration.own_node import OwnNode

pytestmark = pytest.mark.integration

OPS = "/apps/twin_a/operations"
GOALS = 8  # sent at once: answers of both servers interleave in the client's queue


class Twin(OwnNode):
    """Node `name` serving the action /twin/fib (done at once, or once cancelled for
    order 99) and the service /twin/trigger, as its twin does in another process."""

    def __init__(self, domain: int, name: str) -> None:
        super().__init__(domain, name)
        self.release = threading.Event()

        def execute(handle: Any) -> Any:
            if handle.request.order == 99:  # runs until cancelled (or the test ends)
                while not handle.is_cancel_requested and not self.release.wait(0.05):
                    pass
                handle.canceled()
                return Fibonacci.Result(sequence=[])
            handle.succeed()
            return Fibonacci.Result(sequence=[0, 1, 1][:handle.request.order])

        self.action = ActionServer(self.node, Fibonacci, "/twin/fib", execute,
                                   goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                   cancel_callback=lambda _h: CancelResponse.ACCEPT,
                                   callback_group=ReentrantCallbackGroup())
        self.service = self.node.create_service(
            Trigger, "/twin/trigger",
            lambda _req, resp: Trigger.Response(success=True, message=name))
        self.start(threads=4)

    def close(self) -> None:
        """Let running goals end, then shut down."""
        self.release.set()
        super().close()


@pytest.fixture(scope="module")
def twins(domain: int) -> Iterator[list[Twin]]:
    pair = [Twin(domain, "twin_a"), Twin(domain, "twin_b")]
    yield pair
    for twin in pair:
        twin.close()


# (ros.executor, ros.service_replies): each client path of the gateway meets the twins.
CLIENT_PATHS = [("events", "loop"), ("single", "loop"), ("events", "executor"),
                ("single", "executor")]


@pytest.fixture(scope="module", params=CLIENT_PATHS, ids=["-".join(p) for p in CLIENT_PATHS])
def gw(request: pytest.FixtureRequest, twins: list[Twin], domain: int,
       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    executor, replies = request.param
    tmp = tmp_path_factory.mktemp(f"duplicate_{executor}_{replies}")
    settings = [f"state_dir={tmp / 'state'}", f"ros.executor={executor}",
                f"ros.service_replies={replies}"]
    with Gateway(free_port(), domain, settings, log_path=tmp / "gateway.log") as g:
        g.wait_for(OPS, lambda b: {"fib", "trigger"} <= {i["id"] for i in b["items"]},
                   timeout=60)
        yield g


def _alive(gw: Gateway) -> None:
    assert gw.proc is not None and gw.proc.poll() is None, f"the gateway died: {gw.log_path}"
    assert gw.get("/health").status in (200, 503)


def test_goals_to_a_twice_served_action_end(gw: Gateway) -> None:
    """Both servers accept each goal and send its result: the first answers count."""
    with ThreadPoolExecutor(GOALS) as pool:
        started = list(pool.map(lambda order: gw.request(
            "POST", f"{OPS}/fib/executions", {"parameters": {"order": order % 4}}),
            range(GOALS)))
    for order, resp in enumerate(started):
        assert resp.status == 202, resp
        path = f"{OPS}/fib/executions/{enc(resp.json()['id'])}"
        done = gw.wait_for(path, lambda b: b["status"] != "running", timeout=30)
        assert done["status"] == "completed", done
        assert done["result"] == {"sequence": [0, 1, 1][:order % 4]}, done
    _alive(gw)
    # the second server's answers were dropped, and /health says which action has two. The
    # client was made by the first goal: on a busy machine the second server may match it
    # only after that batch, so a goal is sent per poll until a second answer arrives.

    def warned(body: dict[str, Any]) -> bool:
        if any(w["code"] == "duplicate_action_servers" for w in body.get("warnings", [])):
            return True
        assert gw.request("POST", f"{OPS}/fib/executions",
                          {"parameters": {"order": 1}}).status == 202
        return False

    body = gw.wait_for("/health", warned, timeout=60)
    warning = next(w for w in body["warnings"] if w["code"] == "duplicate_action_servers")
    assert "/twin/fib" in warning["message"]


def test_a_cancel_to_a_twice_served_action_is_answered(gw: Gateway) -> None:
    """Both servers run the goal and answer its cancel: the first answer ends the DELETE."""
    resp = gw.request("POST", f"{OPS}/fib/executions", {"parameters": {"order": 99}})
    assert resp.status == 202, resp
    path = f"{OPS}/fib/executions/{enc(resp.json()['id'])}"
    assert gw.request("DELETE", path).status == 204
    _alive(gw)


def test_calls_to_a_twice_served_service_are_answered(gw: Gateway) -> None:
    """Both servers answer each request: the first answer counts, the second is dropped."""
    with ThreadPoolExecutor(GOALS) as pool:
        answers = list(pool.map(lambda _i: gw.request(
            "POST", f"{OPS}/trigger/executions", {}), range(GOALS)))
    for resp in answers:
        assert resp.status == 200, resp
        assert resp.json()["parameters"]["success"] is True, resp
    _alive(gw)
