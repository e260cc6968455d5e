"""Data writes: a first PUT reaches the topic's subscribers (a service or action type named in
a PUT is refused in process: tests/data/test_inproc_data.py).

A counting node in the test process subscribes to fresh topics (best-effort and reliable);
every topic gets one PUT from a new gateway publisher, and every one must arrive.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

with warnings.catch_warnings():
    # rosidl_generator_py imports lark, which imports the deprecated sre_parse module.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401

from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Int32

from tests.conftest import free_port
from tests.harness import Gateway, enc
from tests.integration.own_node import OwnNode

pytestmark = pytest.mark.integration

BEST_EFFORT_TOPICS = [f"/writes/be{i}" for i in range(12)]
RELIABLE_TOPICS = [f"/writes/rel{i}" for i in range(4)]


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll predicate until it is true."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Counter(OwnNode):
    """A node `write_counter` subscribing to every test topic; counts what arrives."""

    def __init__(self, domain: int) -> None:
        super().__init__(domain, "write_counter")
        self.received: dict[str, list[int]] = {}
        self._lock = threading.Lock()
        for topics, reliability in ((BEST_EFFORT_TOPICS, ReliabilityPolicy.BEST_EFFORT),
                                    (RELIABLE_TOPICS, ReliabilityPolicy.RELIABLE)):
            for topic in topics:
                self.node.create_subscription(Int32, topic, self._on(topic),
                                              QoSProfile(depth=10, reliability=reliability))
        self.start()

    def _on(self, topic: str) -> Callable[[Any], None]:
        def callback(msg: Any) -> None:
            with self._lock:
                self.received.setdefault(topic, []).append(msg.data)
        return callback

    def got(self, topic: str) -> list[int]:
        """Values received on topic."""
        with self._lock:
            return list(self.received.get(topic, []))


@pytest.fixture(scope="module")
def counter(domain: int) -> Iterator[Counter]:
    c = Counter(domain)
    yield c
    c.close()


@pytest.fixture(scope="module")
def gw(counter: Counter, domain: int, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    log = tmp_path_factory.mktemp("writes") / "gateway.log"
    g = Gateway(free_port(), domain, ["api.vendor=vendor"], log_path=log)
    try:
        g.start(timeout=60)
        g.wait_for("/apps/write_counter/data",
                   lambda b: len(b["items"]) >= len(BEST_EFFORT_TOPICS + RELIABLE_TOPICS),
                   timeout=60)
        yield g
    finally:
        g.stop()


def test_a_first_put_reaches_every_subscriber(gw: Gateway, counter: Counter) -> None:
    # each PUT is the first message of a new gateway publisher
    for n, topic in enumerate(BEST_EFFORT_TOPICS + RELIABLE_TOPICS):
        resp = gw.request("PUT", f"/apps/write_counter/data/{enc(topic)}", {"data": n})
        assert resp.status == 200, resp
        assert resp.json()["x-vendor"]["subscribers_matched"] == 1
    for n, topic in enumerate(BEST_EFFORT_TOPICS + RELIABLE_TOPICS):
        wait_until(lambda t=topic: counter.got(t), 10, f"the first PUT on {topic}")
        assert counter.got(topic) == [n]
