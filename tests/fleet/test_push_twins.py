"""Push on a primary whose robots run the same node: each robot's topic streams on the primary.

The primary, robot1 and robot2 each run `temp_sensor` (fleet ids `temp_sensor`,
`robot1__temp_sensor`, `robot2__temp_sensor`; the function `powertrain` is merged from all
three). Each sensor walks its own range (set through each gateway's configurations), so a
frame tells which gateway it came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.domains import next_domain
from tests.fleet.conftest import wait_until
from tests.harness import Gateway
from tests.integration.test_push_support import Stream

pytestmark = pytest.mark.integration

TOPIC = "/powertrain/engine/temperature"
RANGES = {"robot1": (85.0, 95.0), "robot2": (200.0, 210.0), "local": (300.0, 310.0)}
ROBOTS = ("robot1", "robot2")
APP = {"robot1": "robot1__temp_sensor", "robot2": "robot2__temp_sensor", "local": "temp_sensor"}


@pytest.fixture(scope="module")
def primary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """Two robots with temp_sensor each, behind a primary with its own temp_sensor."""
    logs: Path = tmp_path_factory.mktemp("push-twins")
    d1, d2, d0 = next_domain(), next_domain(), next_domain()
    gateways: list[Gateway] = []
    settings = ["discovery.refresh_debounce_ms=100", "sse.max_clients=10"]
    with Robot.start(d1, nodes=("temp_sensor",), log_dir=logs / "r1"), \
            Robot.start(d2, nodes=("temp_sensor",), log_dir=logs / "r2"), \
            Robot.start(d0, nodes=("temp_sensor",), log_dir=logs / "r0"):
        try:
            r1 = Gateway(free_port(), d1, settings, logs / "robot1.log").start()
            gateways.append(r1)
            r2 = Gateway(free_port(), d2, settings, logs / "robot2.log").start()
            gateways.append(r2)
            gw = Gateway(free_port(), d0, [
                *settings, "aggregation.enabled=true",
                f"aggregation.peer_urls=[http://127.0.0.1:{r1.port},http://127.0.0.1:{r2.port}]",
                "aggregation.peer_names=[robot1,robot2]",
                "aggregation.forward_timeout_ms=4000"], logs / "primary.log").start()
            gateways.append(gw)
            for g, name in ((r2, "robot2"), (gw, "local")):
                g.wait_for("/apps", lambda b: "temp_sensor" in {a["id"] for a in b["items"]},
                           timeout=40)
                for key, value in (("max_temp", RANGES[name][1]), ("min_temp", RANGES[name][0])):
                    resp = g.request("PUT", f"/apps/temp_sensor/configurations/{key}",
                                     {"value": value})
                    assert resp.status == 200, resp
            gw.wait_for("/functions/powertrain/data", lambda b: len(b["items"]) == 3,
                        timeout=60)
            yield gw
        finally:
            for g in gateways:
                g.stop()


def _robot_of(temperature: float) -> str:
    return next((name for name, (low, high) in RANGES.items() if low <= temperature <= high),
                f"none of them ({temperature})")


def _temperatures(stream: Stream, count: int, frame_of: Any) -> list[float]:
    """Temperatures of the next `count` data frames (frame_of picks a frame's envelope)."""
    out = []
    while len(out) < count:
        frame = stream.next(15)  # 0 frames in 15 s: the bug this module guards against
        envelope = frame_of(frame)
        if envelope is None:
            continue
        assert envelope["payload"]["id"] == TOPIC, frame
        out.append(float(envelope["payload"]["data"]["temperature"]))
    return out


def _subscribe(primary: Gateway, entity: str, resource: str) -> dict[str, Any]:
    resp = primary.request("POST", f"/{entity}/cyclic-subscriptions", {
        "resource": resource, "interval": "fast", "duration": 60})
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


@pytest.mark.parametrize("robot", ROBOTS)
def test_a_robot_app_subscription_streams_that_robots_values(primary: Gateway,
                                                             robot: str) -> None:
    app = APP[robot]
    sub = _subscribe(primary, f"apps/{app}", f"/api/v1/apps/{app}/data{TOPIC}")
    stream = Stream(primary.port, sub["event_source"])
    try:
        temps = _temperatures(stream, 3, lambda f: f["data"] if f["event"] == "message"
                              else None)
    finally:
        stream.close()
    assert {_robot_of(t) for t in temps} == {robot}, temps


@pytest.mark.parametrize("robot", [*ROBOTS, "local"])
def test_a_member_qualified_topic_on_the_merged_function_streams_that_robots_values(
        primary: Gateway, robot: str) -> None:
    item = f"{APP[robot]}:{TOPIC}"
    sub = _subscribe(primary, "functions/powertrain",
                     f"/api/v1/functions/powertrain/data/{item}")
    assert sub["observed_resource"] == f"/api/v1/functions/powertrain/data/{item}"
    stream = Stream(primary.port, sub["event_source"])
    try:
        temps = _temperatures(stream, 3, lambda f: f["data"] if f["event"] == "message"
                              else None)
    finally:
        stream.close()
    assert {_robot_of(t) for t in temps} == {robot}, temps
    # a copy on the member's robot only (none for the primary's own member)
    peers = sub["x-vendor"].get("peers", {})  # as created
    assert list(peers) == ([] if robot == "local" else [robot]), peers


def test_the_page_stream_brings_both_robots_rows(primary: Gateway) -> None:
    """The dashboard's one stream: each robot's app and member-qualified topic moves."""
    resources = [f"/api/v1/apps/{APP[r]}/data{TOPIC}" for r in ROBOTS] + [
        f"/api/v1/functions/powertrain/data/{APP[r]}:{TOPIC}" for r in ROBOTS]
    query = "&".join(f"watch={quote(r, safe='/:')}" for r in resources)
    stream = Stream(primary.port, f"/api/v1/x-vendor-page-stream?{query}")
    seen: dict[int, set[str]] = {i: set() for i in range(len(resources))}
    try:
        first = stream.next_event("watching", 15)
        assert not first["data"].get("refused"), first

        def all_watches_delivered() -> bool:
            frame = stream.next(15)
            if frame["event"] == "sample":
                temp = frame["data"]["frame"]["payload"]["data"]["temperature"]
                seen[frame["data"]["watch"]].add(_robot_of(float(temp)))
            return all(len(robots) >= 1 for robots in seen.values())

        wait_until(all_watches_delivered, 60, f"a frame on every watch; seen {seen}")
    finally:
        stream.close()
    assert seen == {0: {"robot1"}, 1: {"robot2"}, 2: {"robot1"}, 3: {"robot2"}}, json.dumps(
        {k: sorted(v) for k, v in seen.items()})
