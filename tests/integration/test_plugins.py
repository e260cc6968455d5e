"""Plugins against a real gateway: the test plugin package's entity, providers and routes;
raising, hanging and unloadable plugins; the same gateway without them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error

pytestmark = pytest.mark.integration

PLUGINS = "plugins=[test_plc,test_raising,test_hanging,test_old_api,test_bad_config,missing]"


@pytest.fixture(scope="module")
def gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    settings = [PLUGINS, "plugins.test_plc.label=Press", "plugin_call_timeout_sec=1.0",
                f"state_dir={tmp / 'state'}"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: any(i["id"] == "plc_1" for i in b["items"]), timeout=20)
        yield g


def test_plugin_entity_is_discovered(gw: Gateway) -> None:
    item = next(i for i in gw.get("/apps").json()["items"] if i["id"] == "plc_1")
    assert item["name"] == "Press 1" and item["x-vendor"]["source"] == "test_plc"
    func = gw.get("/functions/plc_line/hosts").json()
    assert [i["id"] for i in func["items"]] == ["plc_1"]
    detail = gw.get("/apps/plc_1").json()
    assert detail["description"] == "A PLC reached through a test plugin"


def test_data_provider_serves_the_plugin_entity(gw: Gateway) -> None:
    body = gw.get("/apps/plc_1/data").json()
    assert [i["id"] for i in body["items"]] == ["mode", "pressure"]
    assert body["x-vendor"]["entity_id"] == "plc_1"
    read = gw.get("/apps/plc_1/data/pressure").json()
    assert read["data"] == {"value": 4.2} and read["x-vendor"]["status"] == "data"
    put = gw.request("PUT", "/apps/plc_1/data/pressure", {"value": 5.5})
    assert put.status == 200, put
    assert gw.get("/apps/plc_1/data/pressure").json()["data"] == {"value": 5.5}
    # provider errors keep their status and carry the plugin error body
    err = assert_error(gw.get("/apps/plc_1/data/ghost"), 404, "vendor-error",
                       "x-vendor-plugin-error")
    assert err["parameters"]["entity_id"] == "plc_1" and "ghost" in err["message"]
    assert_error(gw.request("PUT", "/apps/plc_1/data/mode", {"v": 1}), 400, "vendor-error",
                 "x-vendor-plugin-error")


def test_operation_provider_serves_the_plugin_entity(gw: Gateway) -> None:
    ops = gw.get("/apps/plc_1/operations").json()["items"]
    assert [o["id"] for o in ops] == ["reset"] and ops[0]["asynchronous_execution"] is False
    run = gw.request("POST", "/apps/plc_1/operations/reset/executions",
                     {"parameters": {"mode": "manual"}})
    assert run.status == 200, run
    assert run.json()["parameters"] == {"reset": True, "mode": "manual"}
    assert gw.get("/apps/plc_1/data/mode").json()["data"] == {"value": "manual"}
    assert_error(gw.get("/apps/plc_1/operations/nope"), 404)


def test_plugin_route_is_in_the_one_registry(gw: Gateway) -> None:
    resp = gw.get("/apps/plc_1/x-vendor-plc-status")
    assert resp.status == 200, resp
    assert resp.json() == {"app": "plc_1", "link": "up", "label": "Press"}
    doc = gw.get("/docs").json()
    assert "/apps/{app_id}/x-vendor-plc-status" in doc["paths"]
    root = gw.get("/").json()
    assert "GET /api/v1/x-vendor-raise/refused" in root["endpoints"]


def test_raising_plugin_answers_the_plugin_error_body(gw: Gateway) -> None:
    body = assert_error(gw.get("/x-vendor-raise/refused"), 409, "vendor-error",
                        "x-vendor-plugin-error")
    assert body["message"].startswith("device refused the request")
    assert len(body["message"]) == 512 + 3 and body["message"].endswith("...")
    body = assert_error(gw.get("/x-vendor-raise/crash"), 500, "vendor-error",
                        "x-vendor-plugin-error")
    assert body["message"] == "Plugin threw exception"


def test_hanging_plugin_costs_its_caller_a_timeout_only(gw: Gateway) -> None:
    answers: dict[str, object] = {}

    def hang(kind: str) -> None:
        answers[kind] = gw.get(f"/x-vendor-hang/{kind}")
        answers[kind + "_done"] = time.monotonic()

    threads = [threading.Thread(target=hang, args=(k,)) for k in ("sync", "async")]
    for t in threads:
        t.start()
    time.sleep(0.2)  # let both requests reach the plugin
    health = gw.get("/health")
    health_done = time.monotonic()
    for t in threads:
        t.join(60)
    assert health.status == 200
    for kind in ("sync", "async"):
        body = assert_error(answers[kind], 504, "not-responding")  # type: ignore[arg-type]
        assert "test_hanging" in body["message"]
        assert answers[kind + "_done"] > health_done  # type: ignore[operator]
    # the plugin's hung threads do not stop later calls of other plugins
    assert gw.get("/apps/plc_1/x-vendor-plc-status").status == 200


def test_failed_plugins_are_health_warnings(gw: Gateway) -> None:
    health = gw.get("/health")
    assert health.status == 200
    warnings = {w["plugin"]: w for w in health.json()["warnings"]
                if w["code"] == "plugin_load_failed"}
    assert set(warnings) == {"test_old_api", "test_bad_config", "missing"}
    assert "API version" in warnings["test_old_api"]["message"]
    assert "plugins.test_bad_config.level" in warnings["test_bad_config"]["message"]
    assert "no plugin named 'missing'" in warnings["missing"]["message"]
    block = health.json()["x-vendor-plugins"]
    assert block["loaded"] == ["test_plc", "test_raising", "test_hanging"]


def test_updates_answer_501_without_a_provider(gw: Gateway) -> None:
    assert_error(gw.get("/updates"), 501)
    assert_error(gw.request("POST", "/updates", {"id": "u1"}), 501)
    assert_error(gw.get("/updates/u1/status"), 501)
    assert_error(gw.request("PUT", "/updates/u1/prepare"), 501)
    assert gw.get("/").json()["capabilities"]["updates"] is False


def test_without_the_plugin_nothing_of_it_remains(domain: int, tmp_path: object) -> None:
    with Gateway(free_port(), domain, [f"state_dir={tmp_path}"]) as plain:
        plain.wait_for("/health", lambda b: True)
        assert_error(plain.get("/apps/plc_1"), 404)
        assert_error(plain.get("/apps/plc_1/x-vendor-plc-status"), 404)
        assert not any(w["code"] == "plugin_load_failed"
                       for w in plain.get("/health").json()["warnings"])
