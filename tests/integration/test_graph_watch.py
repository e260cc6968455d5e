"""An idle graph is watched, not polled: a new node is listed at once (ros/graph/graph_watch.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

# Idle polls this far apart: without the watch a new node waits up to 10 s to be listed.
IDLE_POLL_MS = 10000
LISTED_WITHIN_S = 2.0  # a node appears 80-250 ms after it starts, plus a loaded machine


@pytest.fixture(scope="module")
def gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    settings = [f"state_dir={tmp / 'state'}",
                f"discovery.idle_poll_interval_ms={IDLE_POLL_MS}"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        yield g


def readiness(gw: Gateway) -> dict[str, Any]:
    return gw.get("/health").json()["x-vendor-readiness"]  # type: ignore[no-any-return]


def wait_idle(gw: Gateway) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = readiness(gw)
        if r["graph_idle"]:
            return r
        time.sleep(0.2)
    raise AssertionError(f"the graph never became idle: {readiness(gw)}")


def test_a_node_started_while_the_graph_is_idle_is_listed_at_once(gw: Gateway,
                                                                   ros: Any) -> None:
    from std_msgs.msg import String

    # Three rounds: an idle poll every 10 s lists each within 2 s one time in five at most.
    for k in range(3):
        r = wait_idle(gw)
        assert r["graph_watch"] is True, r
        node = ros.node(f"watch_probe_{k}", "/watched")
        node.create_publisher(String, "chatter", 10)
        started = time.monotonic()
        gw.wait_for("/apps", lambda b, k=k: any(a["id"] == f"watch_probe_{k}"
                                                for a in b["items"]), timeout=30)
        took = time.monotonic() - started
        assert took <= LISTED_WITHIN_S, f"round {k}: listed after {took:.2f} s"
    assert readiness(gw)["graph_watch_notices"] > 0


def test_a_node_that_leaves_an_idle_graph_is_unlisted_at_once(gw: Gateway, ros: Any) -> None:
    node = ros.node("watch_leaver", "/watched")
    gw.wait_for("/apps", lambda b: any(a["id"] == "watch_leaver" for a in b["items"]),
                timeout=30)
    wait_idle(gw)
    node.destroy_node()
    started = time.monotonic()
    gw.wait_for("/apps", lambda b: all(a["id"] != "watch_leaver" for a in b["items"]),
                timeout=30)
    took = time.monotonic() - started
    assert took <= LISTED_WITHIN_S, f"unlisted after {took:.2f} s"
