"""Configurations (node parameters) against the demo robot: a listing, a write and reset, hung
nodes (the errors, partial answers and entity status are tested in process:
tests/configurations/test_inproc_configurations.py, test_inproc_entities.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, enc

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "unresponsive_param")
TEMP = "/apps/temp_sensor/configurations"
TEMPERATURE = "/apps/temp_sensor/data/" + enc("/powertrain/engine/temperature")


def _all_up(body: dict) -> bool:
    return set(ROBOT_NODES) <= {i["id"] for i in body["items"]}


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    log = tmp_path_factory.mktemp("gw") / "gateway.log"
    with Gateway(free_port(), domain, ["parameter_service_timeout_sec=1",
                                       "service_call_timeout_sec=3"], log) as g:
        g.wait_for("/apps", _all_up, timeout=20)
        yield g


def values(body: dict) -> dict:
    return {i["id"]: i["value"] for i in body["items"]}


def test_list_temp_sensor_parameters(gw: Gateway) -> None:
    body = gw.get(TEMP).json()
    got = values(body)
    assert {k: got[k] for k in ("publish_rate", "min_temp", "max_temp", "temp_step")} == {
        "publish_rate": 2.0, "min_temp": 85.0, "max_temp": 95.0, "temp_step": 0.5}
    assert body["x-vendor"]["entity_id"] == "temp_sensor"
    assert "partial" not in body["x-vendor"]
    item = next(i for i in body["items"] if i["id"] == "min_temp")
    assert item["name"] == "min_temp" and item["type"] == "parameter"
    assert item["x-vendor"]["ros2"] == {"node": "/powertrain/engine/temp_sensor",
                                        "parameter": "min_temp", "type": "double"}
    assert item["x-vendor"]["default_value"] == 85.0


def test_read_set_and_reset_one(gw: Gateway) -> None:
    assert gw.get(f"{TEMP}/min_temp").json()["value"] == 85.0
    resp = gw.request("PUT", f"{TEMP}/min_temp", {"value": 80})  # int -> double
    assert resp.status == 200, resp
    assert resp.json()["value"] == 80.0
    assert gw.get(f"{TEMP}/min_temp").json()["value"] == 80.0
    resp = gw.request("PUT", f"{TEMP}/max_temp", {"value": "99.5"})  # string -> double
    assert resp.json()["value"] == 99.5
    assert gw.request("DELETE", f"{TEMP}/min_temp").status == 204
    assert gw.get(f"{TEMP}/min_temp").json()["value"] == 85.0
    assert gw.get(f"{TEMP}/max_temp").json()["value"] == 99.5  # untouched by the single reset
    assert gw.request("DELETE", f"{TEMP}/max_temp").status == 204
    assert gw.get(f"{TEMP}/max_temp").json()["value"] == 95.0


def test_hung_calls_do_not_block_health_or_data(robot: Robot, domain: int,
                                                tmp_path_factory: pytest.TempPathFactory
                                                ) -> None:
    log = tmp_path_factory.mktemp("gw-hung") / "gateway.log"
    # no negative cache: every one of the twenty requests really waits for the silent node
    with Gateway(free_port(), domain, ["parameter_service_timeout_sec=3",
                                       "parameter_negative_cache_sec=0"], log) as g:
        g.wait_for("/apps", _all_up, timeout=20)
        g.wait_for(TEMPERATURE, lambda b: b["x-vendor"]["status"] == "data")
        hung_done: list[float] = []
        hung_status: list[int] = []
        lock = threading.Lock()

        def hang() -> None:
            resp = g.get("/apps/unresponsive_param/configurations", timeout=60)
            with lock:
                hung_done.append(time.monotonic())
                hung_status.append(resp.status)

        threads = [threading.Thread(target=hang) for _ in range(20)]
        for t in threads:
            t.start()
        # the twenty requests are in the gateway now (the /health read is one more)
        g.wait_for("/health", lambda h: h["x-vendor-requests"]["in_flight"] >= 21, timeout=30)
        quick_done = []
        for _ in range(5):
            assert g.get("/health").status == 200
            read = g.get(TEMPERATURE)
            assert read.status == 200 and read.json()["x-vendor"]["status"] == "data"
            quick_done.append(time.monotonic())
        for t in threads:
            t.join(60)
        assert len(hung_done) == 20
        assert set(hung_status) == {503}
        assert max(quick_done) < min(hung_done)
        # and the gateway answers parameter requests of other nodes afterwards
        assert g.get(f"{TEMP}/min_temp").json()["value"] == 85.0
