"""Fault, log, script and lifecycle providers of plugin entities, plugin-raised faults in the
fault manager, and plugin write routes under the lock guard, against a real gateway."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.integration.test_push_support import Stream

pytestmark = pytest.mark.integration

A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}


@pytest.fixture(scope="module")
def gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    settings = ["plugins=[test_plc,test_sensor]", "plugin_call_timeout_sec=1.0",
                f"state_dir={tmp / 'state'}", "scripts.allow_anonymous=true"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: {"plc_1", "sensor_1"} <= {i["id"] for i in b["items"]},
                   timeout=20)
        yield g


def test_fault_provider_serves_the_plugin_entity(gw: Gateway) -> None:
    items = gw.get("/apps/plc_1/faults").json()["items"]
    assert sorted(f["fault_code"] for f in items) == ["PLC_BATTERY_LOW", "PLC_OVERPRESSURE"]
    detail = gw.get("/apps/plc_1/faults/PLC_OVERPRESSURE").json()
    assert detail["item"]["message"] == "pressure above 9 bar"
    err = assert_error(gw.get("/apps/plc_1/faults/NOPE"), 404, "vendor-error",
                       "x-vendor-plugin-error")
    assert err["parameters"]["entity_id"] == "plc_1" and "NOPE" in err["message"]
    assert gw.request("DELETE", "/apps/plc_1/faults/PLC_BATTERY_LOW").status == 204
    assert [f["fault_code"] for f in gw.get("/apps/plc_1/faults").json()["items"]] == [
        "PLC_OVERPRESSURE"]
    assert_error(gw.request("DELETE", "/apps/plc_1/faults/PLC_BATTERY_LOW"), 404,
                 "vendor-error", "x-vendor-plugin-error")
    # the function hosting it belongs to the same plugin: its provider answers there too
    assert [f["fault_code"] for f in gw.get("/functions/plc_line/faults").json()["items"]] == [
        "PLC_OVERPRESSURE"]
    assert gw.request("DELETE", "/functions/plc_line/faults").status == 204
    assert gw.get("/apps/plc_1/faults").json()["items"] == []


def test_plugin_raised_faults_reach_the_fault_manager(gw: Gateway) -> None:
    stream = Stream(gw.port, "/api/v1/faults/stream")
    try:
        assert stream.status == 200
        resp = gw.request("POST", "/apps/sensor_1/x-vendor-sensor-fault",
                          {"code": "SENSOR_DRIFT", "description": "drift beyond 3 sigma"})
        assert resp.status == 200 and resp.json()["reported"] is True, resp
        source = resp.json()["source"]
        listed = gw.wait_for("/faults", lambda b: any(
            f["fault_code"] == "SENSOR_DRIFT" for f in b["items"]), timeout=15)
        fault = next(f for f in listed["items"] if f["fault_code"] == "SENSOR_DRIFT")
        assert fault["source"] == source and fault["message"] == "drift beyond 3 sigma"
        deadline = time.monotonic() + 15
        while True:  # the fault stream carries it
            frame = stream.next(max(0.1, deadline - time.monotonic()))
            if "SENSOR_DRIFT" in str(frame["data"]):
                break
    finally:
        stream.close()
    assert source == "/x-plugin/test_sensor/apps/sensor_1"
    # the entity's own fault routes serve the faults it raised (no fault provider)
    own = gw.get("/apps/sensor_1/faults").json()["items"]
    assert [f["fault_code"] for f in own] == ["SENSOR_DRIFT"]
    # ... and so does the component hosting it, and a cyclic subscription on its faults
    hosts = [c["id"] for c in gw.get("/components").json()["items"]
             if "sensor_1" in {h["id"] for h in gw.get(f"/components/{c['id']}/hosts").json()[
                 "items"]}]
    assert hosts, "the plugin app is hosted on a component"
    assert "SENSOR_DRIFT" in {f["fault_code"] for f in gw.get(
        f"/components/{hosts[0]}/faults").json()["items"]}
    sub = gw.request("POST", "/apps/sensor_1/cyclic-subscriptions",
                     {"resource": "/api/v1/apps/sensor_1/faults", "interval": "fast",
                      "duration": 30})
    assert sub.status == 201, sub
    cyclic = Stream(gw.port, sub.json()["event_source"])
    try:
        frame = cyclic.next(20)
        assert [f["fault_code"] for f in frame["data"]["payload"]["data"]] == ["SENSOR_DRIFT"]
    finally:
        cyclic.close()
    detail = gw.get("/apps/sensor_1/faults/SENSOR_DRIFT").json()
    assert detail["item"]["code"] == "SENSOR_DRIFT"
    assert detail["x-vendor"]["reporting_sources"] == [source]
    assert_error(gw.get("/apps/sensor_1/faults/OTHER"), 404, "resource-not-found")
    assert_error(gw.get("/apps/sensor_1/faults?status=bogus"), 400, "invalid-parameter")
    assert gw.request("DELETE", "/apps/sensor_1/faults/SENSOR_DRIFT").status == 204
    assert gw.get("/apps/sensor_1/faults").json()["items"] == []
    cleared = gw.get("/apps/sensor_1/faults?status=cleared").json()["items"]
    assert [f["fault_code"] for f in cleared] == ["SENSOR_DRIFT"]


def test_log_provider_applies_the_entity_configuration(gw: Gateway) -> None:
    items = gw.get("/apps/plc_1/logs").json()["items"]
    assert [e["message"] for e in items] == ["poll", "link up", "pressure high"]
    put = gw.request("PUT", "/apps/plc_1/logs/configuration",
                     {"severity_filter": "info", "max_entries": 1})
    assert put.status == 204, put
    items = gw.get("/apps/plc_1/logs").json()["items"]
    assert [(e["severity"], e["message"]) for e in items] == [("warning", "pressure high")]
    # a plugin entity without a log provider has no entries
    assert gw.get("/apps/sensor_1/logs").json()["items"] == []


def test_script_provider_serves_the_plugin_entity(gw: Gateway) -> None:
    assert gw.get("/").json()["capabilities"]["scripts"] is True  # a plugin backend
    scripts = gw.get("/apps/plc_1/scripts").json()["items"]
    assert [s["id"] for s in scripts] == ["calibrate", "broken", "stuck"]
    assert scripts[0]["managed"] is True and scripts[0]["href"].endswith(
        "/apps/plc_1/scripts/calibrate")
    assert gw.get("/apps/plc_1/scripts/calibrate").json()["parameters_schema"] == {
        "type": "object"}
    assert_error(gw.get("/apps/plc_1/scripts/nope"), 404, "resource-not-found")
    run = gw.request("POST", "/apps/plc_1/scripts/calibrate/executions",
                     {"execution_type": "on_restart", "parameters": {"zero": True}})
    assert run.status == 202, run
    record = run.json()
    assert record["status"] == "running" and "completed_at" not in record
    assert record["x-vendor"]["request"]["execution_type"] == "on_restart"
    location = run.headers["location"]
    assert location.endswith(f"/apps/plc_1/scripts/calibrate/executions/{record['id']}")
    path = location[len("/api/v1"):]
    assert gw.get(path).json()["id"] == record["id"]
    assert [e["id"] for e in gw.get("/apps/plc_1/scripts/calibrate/executions").json()[
        "items"]] == [record["id"]]
    stop = gw.request("PUT", path, {"action": "stop"})
    assert stop.status == 202 and stop.json()["status"] == "terminated", stop
    assert_error(gw.request("PUT", path, {"action": "pause"}), 400, "invalid-parameter")
    assert_error(gw.get("/apps/plc_1/scripts/calibrate/executions/exec_99"), 404)
    assert_error(gw.request("POST", "/apps/plc_1/scripts/calibrate/executions",
                            {"execution_type": "later"}), 400, "invalid-parameter")
    assert_error(gw.request("DELETE", "/apps/plc_1/scripts/calibrate"), 409, "vendor-error",
                 "script-managed")
    assert_error(gw.request("DELETE", path), 400)
    # a raising and a hanging provider call: plugin error body and a caller timeout
    body = assert_error(gw.request("POST", "/apps/plc_1/scripts/broken/executions",
                                   {"execution_type": "now"}), 500, "vendor-error",
                        "x-vendor-plugin-error")
    assert body["message"] == "Plugin threw exception"
    body = assert_error(gw.request("POST", "/apps/plc_1/scripts/stuck/executions",
                                   {"execution_type": "now"}), 504, "not-responding")
    assert "test_plc" in body["message"]
    # the built-in backend is not configured: a ROS-less plugin entity without a provider
    assert_error(gw.get("/apps/sensor_1/scripts"), 501)


def test_lifecycle_provider_controls_the_plugin_entity(gw: Gateway) -> None:
    status = gw.get("/apps/plc_1/status").json()
    assert status["status"] == "ready"
    assert status["shutdown"] == "/api/v1/apps/plc_1/status/shutdown"
    assert "start" not in status and status["x-vendor"]["source"] == "test_plc"
    resp = gw.request("PUT", "/apps/plc_1/status/shutdown")
    assert resp.status == 202 and resp.body == b"", resp
    assert resp.headers["location"] == "/api/v1/apps/plc_1/status"
    status = gw.get("/apps/plc_1/status").json()
    assert status["status"] == "notReady" and status["start"].endswith("/status/start")
    body = assert_error(gw.request("PUT", "/apps/plc_1/status/restart"), 409,
                        "precondition-not-fulfilled")
    assert body["parameters"]["entity_id"] == "plc_1"
    assert_error(gw.request("PUT", "/apps/plc_1/status/force-shutdown"), 403,
                 "insufficient-access-rights")
    assert gw.request("PUT", "/apps/plc_1/status/start").status == 202
    assert gw.get("/apps/plc_1/status").json()["status"] == "ready"
    # no lifecycle provider: 501, and the status from the entity's online flag
    body = assert_error(gw.request("PUT", "/apps/sensor_1/status/start"), 501,
                        "not-implemented")
    assert "Lifecycle control not available for this entity" in body["message"]
    assert "vendor_code" not in body
    params = body["parameters"]
    assert (params["feature"], params["entity_id"]) == ("lifecycle", "sensor_1")
    assert "offers no lifecycle provider" in params["details"]  # the gateway's own hint
    assert gw.get("/apps/sensor_1/status").json()["status"] == "ready"


def test_plugin_write_routes_pass_the_lock_guard(gw: Gateway) -> None:
    lock = gw.request("POST", "/apps/plc_1/locks", {"lock_expiration": 60}, headers=A)
    assert lock.status == 201, lock
    lock_id = lock.json()["id"]
    try:
        body = assert_error(gw.request("POST", "/apps/plc_1/x-vendor-plc-command",
                                       {"cmd": "open"}, headers=B), 409, "lock-broken")
        assert body["parameters"]["lock_id"] == lock_id
        assert body["parameters"]["collection"] == "x-vendor-plc-command"
        ok = gw.request("POST", "/apps/plc_1/x-vendor-plc-command", {"cmd": "open"}, headers=A)
        assert ok.status == 200 and ok.json()["accepted"] == {"cmd": "open"}, ok
        # the routed provider writes of a plugin entity are guarded too
        assert_error(gw.request("PUT", "/apps/plc_1/status/shutdown", headers=B), 409,
                     "lock-broken")
        assert_error(gw.request("POST", "/apps/plc_1/scripts/calibrate/executions",
                                {"execution_type": "now"}, headers=B), 409, "lock-broken")
        assert_error(gw.request("DELETE", "/apps/plc_1/faults", headers=B), 409, "lock-broken")
        # reads are not
        assert gw.get("/apps/plc_1/x-vendor-plc-status", headers=B).status == 200
    finally:
        assert gw.request("DELETE", f"/apps/plc_1/locks/{lock_id}", headers=A).status == 204
    assert gw.request("POST", "/apps/plc_1/x-vendor-plc-command", {"cmd": "close"},
                      headers=B).status == 200
