"""An idle graph is watched, not polled: a new node is listed at once (ros/graph/graph_watch.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

# An idle watched graph is polled this far apart (10 min): a node listed within the tests'
# budget (30 s, for a loaded machine; it takes 80-250 ms on a quiet one) was listed because
# the watch woke the poll, not by an idle poll. No timing is asserted.
WATCHED_IDLE_POLL_MS = 600000
BUDGET_S = 30


@pytest.fixture(scope="module")
def gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    settings = [f"state_dir={tmp / 'state'}",
                f"discovery.watched_idle_poll_interval_ms={WATCHED_IDLE_POLL_MS}"]
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

    for k in range(3):  # three rounds: each one from an idle graph
        r = wait_idle(gw)
        assert r["graph_watch"] is True, r
        notices = r["graph_watch_notices"]
        node = ros.node(f"watch_probe_{k}", "/watched")
        node.create_publisher(String, "chatter", 10)
        gw.wait_for("/apps", lambda b, k=k: any(a["id"] == f"watch_probe_{k}"
                                                for a in b["items"]), timeout=BUDGET_S)
        assert readiness(gw)["graph_watch_notices"] > notices, f"round {k}: no watch notice"


def test_a_node_that_leaves_an_idle_graph_is_unlisted_at_once(gw: Gateway, ros: Any) -> None:
    node = ros.node("watch_leaver", "/watched")
    gw.wait_for("/apps", lambda b: any(a["id"] == "watch_leaver" for a in b["items"]),
                timeout=30)
    notices = wait_idle(gw)["graph_watch_notices"]
    node.destroy_node()
    gw.wait_for("/apps", lambda b: all(a["id"] != "watch_leaver" for a in b["items"]),
                timeout=BUDGET_S)  # an idle poll would come only after 10 min
    assert readiness(gw)["graph_watch_notices"] > notices
