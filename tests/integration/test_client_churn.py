"""Clients come and go: cyclic delivery is counted in /health, and open files come back down.

A real gateway on the demo robot serves many SSE streams (cyclic subscriptions, triggers,
the fault stream), data and configuration reads; once every client has left, the gateway's
open file count returns to what it was before they came. Configuration reads call each
node's parameter services: each service client holds an eventfd until it is closed unused
(`ros.service_client_idle_sec`, shortened here so the test need not wait two minutes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway
from tests.integration.test_faults_support import wait_until
from tests.sse_client import SseClient

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "rpm_sensor", "pressure_sensor", "lidar_sensor")
TEMP = "/api/v1/apps/temp_sensor/data/powertrain/engine/temperature"
APPS = ("temp_sensor", "rpm_sensor", "pressure_sensor", "lidar_sensor")
STREAMS_PER_KIND = 12
FD_SLACK = 4  # a lazily opened file or two (a log rotation, a cached socket) is no leak


@pytest.fixture(scope="module")
def gw(robot: Any, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("churn")
    settings = [f"state_dir={tmp / 'state'}", "sse.max_clients=200",
                "sse.max_subscriptions=100", "sse.keepalive_sec=1",
                "ros.service_client_idle_sec=3"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: set(APPS) <= {a["id"] for a in b["items"]}, timeout=60)
        for app in APPS:
            g.wait_for(f"/apps/{app}/data", lambda b: bool(b["items"]), timeout=60)
        yield g


def open_files(gw: Gateway) -> int:
    assert gw.proc is not None
    return len(os.listdir(f"/proc/{gw.proc.pid}/fd"))


def subscribe(gw: Gateway, interval: str = "fast") -> dict[str, Any]:
    resp = gw.request("POST", "/apps/temp_sensor/cyclic-subscriptions",
                      {"resource": TEMP, "interval": interval, "duration": 300})
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


def push_stats(gw: Gateway) -> dict[str, Any]:
    return gw.get("/health").json()["x-vendor-push"]  # type: ignore[no-any-return]


def test_cyclic_delivery_is_counted_in_health(gw: Gateway) -> None:
    before = push_stats(gw)["cyclic_delivery"]
    assert set(before) == {"intervals_due", "frames_delivered", "delivered_share"}
    stream = SseClient(gw.port, subscribe(gw)["event_source"])
    try:
        stream.collect(5, timeout=60)
        after = wait_until(lambda: (lambda d: d if d["frames_delivered"] >= before[
            "frames_delivered"] + 5 else None)(push_stats(gw)["cyclic_delivery"]), 60,
            "the frames counted")
    finally:
        stream.close()
    assert after["intervals_due"] >= after["frames_delivered"] > 0, after
    assert 0.0 < after["delivered_share"] <= 1.0, after


def _churn(gw: Gateway, per_kind: int) -> None:
    """Open streams of every kind and read data, then leave (closing every connection)."""
    streams: list[SseClient] = []
    try:
        for _ in range(per_kind):
            streams.append(SseClient(gw.port, subscribe(gw)["event_source"]))
            resp = gw.request("POST", "/apps/temp_sensor/triggers",
                              {"resource": TEMP, "trigger_condition": {"condition_type":
                                                                       "OnChange"},
                               "multishot": True})
            assert resp.status == 201, resp
            streams.append(SseClient(gw.port, resp.json()["event_source"]))
            streams.append(SseClient(gw.port, "/api/v1/faults/stream"))
        assert all(s.status == 200 for s in streams), [s.status for s in streams]
        for app in APPS:
            for item in gw.get(f"/apps/{app}/data").json()["items"]:
                path = f"/apps/{app}/data/{item['id'].lstrip('/')}"
                assert gw.get(path).status in (200, 503, 504), path
            for item in gw.get(f"/apps/{app}/configurations").json()["items"][:3]:
                path = f"/apps/{app}/configurations/{item['id']}"
                assert gw.get(path).status in (200, 503, 504), path
        wait_until(lambda: all(s.frames.qsize() or s.comments for s in streams), 60,
                   "every stream got something")
    finally:
        for s in streams:
            s.close()
    # the gateway saw every client leave (a cyclic subscription ends with its client)
    wait_until(lambda: push_stats(gw)["connected_clients"] == 0, 60, "the clients gone")


def test_open_files_come_back_after_clients_leave(gw: Gateway) -> None:
    wait_until(lambda: push_stats(gw)["connected_clients"] == 0, 60, "earlier clients gone")
    baseline = open_files(gw)  # before any client of this test came
    for _ in range(3):
        _churn(gw, STREAMS_PER_KIND)
    assert gw.get("/health").json()["x-vendor-service-calls"]["loop_clients"] > 0
    counts: list[int] = []

    def settled() -> bool:  # the idle clients closed, and the files came back with them
        counts.append(open_files(gw))
        clients = gw.get("/health").json()["x-vendor-service-calls"]["loop_clients"]
        return clients == 0 and counts[-1] <= baseline + FD_SLACK

    try:
        wait_until(settled, 120, "open files back to the baseline")
    except AssertionError:
        fds = sorted(os.readlink(f"/proc/{gw.proc.pid}/fd/{n}")  # type: ignore[union-attr]
                     for n in os.listdir(f"/proc/{gw.proc.pid}/fd"))  # type: ignore[union-attr]
        raise AssertionError(f"open files stayed at {counts[-1]} (baseline {baseline}): "
                             f"{fds}") from None
