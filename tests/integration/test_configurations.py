"""Configurations (node parameters) and entity status against the demo robot."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, assert_error, enc

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "unresponsive_param", "managed_lifecycle")
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


@pytest.fixture(scope="module")
def host(gw: Gateway) -> str:
    return str(gw.get("/components").json()["items"][0]["id"])


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


def test_reset_all(gw: Gateway) -> None:
    for name, value in (("publish_rate", 4.0), ("temp_step", 1.5), ("min_temp", 70.0)):
        assert gw.request("PUT", f"{TEMP}/{name}", {"value": value}).status == 200
    assert gw.request("DELETE", TEMP).status == 204
    got = values(gw.get(TEMP).json())
    assert (got["publish_rate"], got["temp_step"], got["min_temp"]) == (2.0, 0.5, 85.0)


def test_set_errors(gw: Gateway) -> None:
    body = assert_error(gw.request("PUT", f"{TEMP}/min_temp", {"value": "hot"}), 400,
                        "invalid-request")
    assert body["parameters"]["field"] == "value" and "double" in body["message"]
    assert_error(gw.request("PUT", f"{TEMP}/min_temp", {"value": [1]}), 400)
    assert_error(gw.request("PUT", f"{TEMP}/min_temp", {"valu": 1}), 400)
    # the node's own validation: its reason is passed on
    body = assert_error(gw.request("PUT", f"{TEMP}/publish_rate", {"value": 0}), 400)
    assert "publish_rate must be > 0" in body["message"]
    # read-only parameter: the node's reason
    body = assert_error(gw.request("PUT", f"{TEMP}/start_type_description_service",
                                   {"value": False}), 400)
    assert "read-only" in body["parameters"]["reason"]
    assert_error(gw.get(f"{TEMP}/no_such_param"), 404, "resource-not-found")
    assert_error(gw.request("PUT", f"{TEMP}/no_such_param", {"value": 1}), 404)
    assert gw.get(f"{TEMP}/min_temp").json()["value"] == 85.0


def test_partial_answers_with_an_unresponsive_node(gw: Gateway, host: str) -> None:
    first = gw.get(f"/components/{host}/configurations")
    assert first.status == 200, first
    body = first.json()
    xv = body["x-vendor"]
    assert xv["partial"] is True
    assert xv["unavailable_nodes"] == ["/unresponsive_param"]
    assert "failed_nodes" not in xv
    ids = {i["id"] for i in body["items"]}
    assert {"temp_sensor:min_temp", "temp_sensor:publish_rate"} <= ids
    assert not any(i.startswith("unresponsive_param:") for i in ids)
    second = gw.get(f"/components/{host}/configurations").json()
    assert second["x-vendor"]["unavailable_nodes"] == ["/unresponsive_param"]
    # the app alone: no node answered, so the node's failure is the answer; the silent node
    # is negatively cached, so it is not asked (and waited for) again
    body = assert_error(gw.get("/apps/unresponsive_param/configurations"), 503, "vendor-error",
                        "x-vendor-ros2-node-unavailable")
    assert "recently" in body["message"] and body["parameters"]["node"] == "/unresponsive_param"
    # qualified and bare ids on the component
    item = gw.get(f"/components/{host}/configurations/temp_sensor:min_temp").json()
    assert item["id"] == "temp_sensor:min_temp" and item["value"] == 85.0
    assert gw.get(f"/components/{host}/configurations/temp_step").json()["id"] == \
        "temp_sensor:temp_step"
    body = assert_error(gw.get(f"/components/{host}/configurations/use_sim_time"), 404)
    assert "temp_sensor:use_sim_time" in body["parameters"]["candidates"]
    resp = gw.request("PUT", f"/components/{host}/configurations/temp_sensor:temp_step",
                      {"value": 2})
    assert resp.json()["value"] == 2.0
    # reset-all over the component: a local member that was not reset is the error (207
    # is only for members run by another gateway); the body says what was reset
    resp = gw.request("DELETE", f"/components/{host}/configurations")
    body = assert_error(resp, 503, "vendor-error", "x-vendor-ros2-node-unavailable")
    status = {i["id"]: i["status"] for i in body["parameters"]["items"]}
    assert status["unresponsive_param"] == 503 and status["temp_sensor"] == 204
    assert "unresponsive_param" in body["message"]
    assert gw.get(f"{TEMP}/temp_step").json()["value"] == 0.5


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


def test_app_status(gw: Gateway) -> None:
    body = gw.get("/apps/temp_sensor/status").json()
    assert body["id"] == "temp_sensor" and body["status"] == "ready"
    assert body["x-vendor"]["is_online"] is True
    assert "lifecycle" not in body["x-vendor"]
    body = gw.get("/apps/managed_lifecycle/status").json()
    assert body["status"] == "ready"
    assert body["x-vendor"]["lifecycle"] == {"state": "active", "state_id": 3}
    assert_error(gw.get("/apps/ghost/status"), 404)


def test_component_status_and_lifecycle_control(gw: Gateway, host: str) -> None:
    body = gw.get(f"/components/{host}/status").json()
    assert body["status"] == "ready"
    assert body["x-vendor"]["apps_online"] == body["x-vendor"]["apps_total"] == 3
    for action in ("restart", "shutdown", "force-shutdown"):
        assert_error(gw.request("PUT", f"/apps/temp_sensor/status/{action}", {}), 501)
    # status is served for apps and components only
    assert gw.get("/functions/powertrain/status").status in (404, 405)
