"""medkit-wire.md rows of locks, scripts, lifecycle, push delivery, updates, areas and graph,
in both wire profiles against the demo robot.

Per profile two gateways: `on` (the demo manifest in hybrid mode, a scripts directory, the graph
and update provider plugins; locking and triggers on by default) and `off` (runtime discovery with locking, triggers,
fault triggers and /docs turned off, no scripts directory, no update provider).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import ROOT, Gateway, Response, assert_error, enc
from tests.integration.test_bulk_data import multipart
from tests.integration.wire_support import PROFILES, XV, xv

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "calibration")
MANIFEST = ROOT / "deploy" / "demo_manifest.yaml"
APP = "/apps/temp_sensor"
SCRIPTS = {"slow.sh": "echo slow\nsleep 60\n", "hello.sh": "echo hello\n"}
A, B = {"X-Client-Id": "client-a"}, {"X-Client-Id": "client-b"}
# The script codes per profile (medkit-wire.md section 1.1; x-medkit- under the medkit word).
SCRIPT_CODES = {
    "spec": {"managed": "script-managed", "running": "script-running",
             "not-running": "script-not-running", "limit": "script-concurrency-limit",
             "large": "script-file-too-large"},
    "medkit": {"managed": "x-medkit-managed-script", "running": "x-medkit-script-running",
               "not-running": "x-medkit-script-not-running",
               "limit": "x-medkit-concurrency-limit", "large": "x-medkit-script-too-large"},
}


def _start(tmp: Path, domain: int, name: str, settings: list[str]) -> Gateway:
    base = [f"state_dir={tmp / name}", "discovery.refresh_debounce_ms=100",
            "snapshots.enabled=false"]
    return Gateway(free_port(), domain, base + settings, tmp / f"{name}.log").start()


@pytest.fixture(scope="module")
def gateways(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[tuple[str, str], Gateway]]:
    tmp = tmp_path_factory.mktemp("wire-features")
    scripts = tmp / "scripts"
    scripts.mkdir()
    for name, text in SCRIPTS.items():
        (scripts / name).write_text(text)
    gws: dict[tuple[str, str], Gateway] = {}
    try:
        for profile in PROFILES:
            gws[profile, "on"] = _start(tmp, domain, f"{profile}-on", [
                f"api.profile={profile}", "discovery.mode=hybrid",
                f"discovery.manifest_path={MANIFEST}", f"scripts.scripts_dir={scripts}",
                "scripts.max_concurrent_executions=1", "scripts.max_file_size_mb=1",
                "scripts.allow_anonymous=true", "scripts.allow_root=true",
                "plugins=[graph_provider,update_provider]",
                f"plugins.update_provider.install_root={tmp / profile / 'installed'}"])
            gws[profile, "off"] = _start(tmp, domain, f"{profile}-off", [
                f"api.profile={profile}", "locking.enabled=false", "triggers.enabled=false",
                "fault_triggers.enabled=false", "docs.enabled=false"])
        for (prof, _mode), g in gws.items():
            g.wait_for("/apps", lambda b, p=prof: {"temp_sensor", "calibration"} <= {
                i["id"] for i in b["items"] if xv(p, i).get("is_online", True)}, timeout=30)
        yield gws
    finally:
        for g in gws.values():
            g.stop()


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def on(gateways: dict[tuple[str, str], Gateway], profile: str) -> Gateway:
    return gateways[profile, "on"]


@pytest.fixture
def off(gateways: dict[tuple[str, str], Gateway], profile: str) -> Gateway:
    return gateways[profile, "off"]


def lock(gw: Gateway, path: str, client: dict[str, str], **body: Any) -> dict[str, Any]:
    resp = gw.request("POST", f"{path}/locks", {"lock_expiration": 60, **body}, headers=client)
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


def release(gw: Gateway, path: str, lock_id: str, client: dict[str, str]) -> None:
    assert gw.request("DELETE", f"{path}/locks/{lock_id}", headers=client).status == 204


# --- locks -------------------------------------------------------------------------------------


def test_lock_body(on: Gateway, profile: str) -> None:
    held = lock(on, APP, A, scopes=["data"])
    try:
        assert set(held) == {"id", "owned", "scopes", "lock_expiration"} and held["owned"]
        listed = on.get(f"{APP}/locks", headers=B).json()
        assert [i["id"] for i in listed["items"]] == [held["id"]]
        assert listed["items"][0]["owned"] is False
        assert xv(profile, listed)["total_count"] == 1
    finally:
        release(on, APP, held["id"], A)


def test_lock_conflict_is_409_lock_broken(on: Gateway, profile: str) -> None:
    held = lock(on, APP, A, scopes=["configurations", "faults"])
    try:
        for client in (B, None):  # no X-Client-Id counts as another client
            resp = on.request("PUT", f"{APP}/configurations/publish_rate", {"data": 2.0},
                              headers=client)
            body = assert_error(resp, 409, "lock-broken")
            assert body["parameters"]["entity_id"] == "temp_sensor"
            assert body["parameters"]["collection"] == "configurations"
            assert body["parameters"]["lock_id"] == held["id"]
        body = assert_error(on.request("DELETE", f"{APP}/faults/SOME_FAULT", headers=B), 409,
                            "lock-broken")
        assert body["parameters"]["collection"] == "faults"
        resp = on.request("PUT", f"{APP}/data/{enc('/powertrain/engine/temperature')}",
                          {"temperature": 300.0}, headers=B)
        assert resp.status == 200, resp  # data: not in the lock's scopes
    finally:
        release(on, APP, held["id"], A)


def test_lock_required_is_409_invalid_request(on: Gateway, profile: str) -> None:
    # the manifest's engine-ecu requires a lock for configurations
    resp = on.request("DELETE", "/components/engine-ecu/configurations", headers=B)
    body = assert_error(resp, 409, "invalid-request")
    assert body["parameters"]["details"] == \
        "A lock must be held to modify this resource collection"
    assert body["parameters"]["entity_id"] == "engine-ecu"
    assert body["parameters"]["collection"] == "configurations"


def test_lock_collection_on_another_entity_type(on: Gateway, profile: str) -> None:
    resp = on.get("/areas/powertrain/locks")
    if profile == "medkit":
        body = assert_error(resp, 400, "collection-not-supported")
        assert body["message"] == "Area entities do not support locks collection"
    else:
        assert_error(resp, 404, "resource-not-found")


# --- 501 answers of absent features ------------------------------------------------------------


@pytest.mark.parametrize("method,path,feature,message", [
    ("GET", f"{APP}/locks", "locks", "Locking is not enabled on this gateway"),
    ("GET", f"{APP}/scripts", "scripts", "Scripts backend not configured"),
    ("GET", "/updates", "updates", "Software updates backend not configured"),
    ("GET", f"{APP}/triggers", "triggers", "Triggers not available"),
    ("GET", f"{APP}/fault-triggers", "fault-triggers", "Fault triggers not available"),
    ("GET", "/docs", "docs", "Capability description is disabled"),
])
def test_absent_feature_is_501_not_implemented(off: Gateway, profile: str, method: str,
                                               path: str, feature: str, message: str) -> None:
    body = assert_error(off.request(method, path), 501, "not-implemented")
    assert body["message"] == message
    assert body["parameters"]["feature"] == feature and body["parameters"]["details"]


def test_lifecycle_of_a_plain_node_is_501(on: Gateway, profile: str) -> None:
    body = assert_error(on.request("PUT", f"{APP}/status/restart"), 501, "not-implemented")
    assert body["message"] == "Lifecycle control not available for this entity"
    assert body["parameters"]["entity_id"] == "temp_sensor"
    assert "plain node" in body["parameters"]["details"]


def test_root_capabilities_follow_the_features(gateways: dict[tuple[str, str], Gateway],
                                               profile: str) -> None:
    on = gateways[profile, "on"].get("/").json()["capabilities"]
    off = gateways[profile, "off"].get("/").json()["capabilities"]
    for key in ("locking", "scripts", "triggers", "updates"):
        assert on[key] is True and off[key] is False, key
    assert "vendor_extensions" in on


# --- scripts -----------------------------------------------------------------------------------


def _run(gw: Gateway, script: str) -> Response:
    return gw.request("POST", f"{APP}/scripts/{script}/executions", {"execution_type": "now"})


def test_script_codes(on: Gateway, profile: str) -> None:
    codes = SCRIPT_CODES[profile]
    assert_error(on.request("DELETE", f"{APP}/scripts/hello"), 409, "vendor-error",
                 codes["managed"])
    started = _run(on, "slow")
    assert started.status == 202, started
    location = started.headers["location"][len("/api/v1"):]
    try:
        assert_error(_run(on, "hello"), 429, "vendor-error", codes["limit"])
        assert_error(on.request("DELETE", location), 409, "vendor-error", codes["running"])
    finally:
        assert on.request("PUT", location, {"action": "forced_termination"}).status in (200, 202)
    on.wait_for(location, lambda b: b["status"] == "terminated", timeout=30)
    assert_error(on.request("PUT", location, {"action": "stop"}), 409, "vendor-error",
                 codes["not-running"])
    assert on.request("DELETE", location).status == 204


def test_script_upload_too_large(on: Gateway, profile: str) -> None:
    raw, ctype = multipart(("file", "big.sh", "text/plain", b"#" * (1024 * 1024 + 70000)))
    resp = on.request("POST", f"{APP}/scripts", raw=raw, headers={"Content-Type": ctype})
    assert_error(resp, 413, "vendor-error", SCRIPT_CODES[profile]["large"])


# --- push delivery -----------------------------------------------------------------------------


def test_subscription_errors_carry_the_vendor_codes(on: Gateway, profile: str) -> None:
    word = XV[profile]
    other = "/api/v1/apps/calibration/faults"
    resp = on.request("POST", f"{APP}/cyclic-subscriptions",
                      {"resource": other, "interval": "normal", "duration": 10})
    assert_error(resp, 400, "vendor-error", f"{word}-entity-mismatch")
    resp = on.request("POST", f"{APP}/cyclic-subscriptions",
                      {"resource": f"/api/v1{APP}/faults", "interval": "normal",
                       "duration": 10, "protocol": "websocket"})
    assert_error(resp, 400, "vendor-error", f"{word}-unsupported-protocol")
    resp = on.request("POST", f"{APP}/triggers",
                      {"resource": other, "trigger_condition": {"condition_type": "OnChange"}})
    assert_error(resp, 400, "vendor-error", f"{word}-entity-mismatch")


# --- entities: detail URIs, areas, components, functions -----------------------------------------


def test_detail_uris_of_the_features(on: Gateway, profile: str) -> None:
    detail = on.get(APP).json()
    for word in ("locks", "scripts", "cyclic-subscriptions", "triggers", "status", "logs"):
        assert detail[word] == f"/api/v1{APP}/{word}", word
        assert {"name": word, "href": f"/api/v1{APP}/{word}"} in detail["capabilities"]
    func = on.get("/functions/engine-monitoring").json()
    graph = f"{XV[profile]}-graph"
    assert func[graph] == f"/api/v1/functions/engine-monitoring/{graph}"
    assert on.get(f"/functions/engine-monitoring/{graph}").status == 200
    assert "hosts" in func
    area = on.get("/areas/powertrain").json()
    assert {"subareas", "components", "contains"} <= set(area)


def test_detail_uris_of_absent_features(off: Gateway, profile: str) -> None:
    detail = off.get(APP).json()
    names = {c["name"] for c in detail["capabilities"]}
    for word in ("locks", "scripts", "triggers"):  # only when served
        assert word not in detail and word not in names, word
    assert detail["cyclic-subscriptions"] == f"/api/v1{APP}/cyclic-subscriptions"


def test_area_component_function_items(on: Gateway, profile: str) -> None:
    # top-level lists hold no nested entities: those come from their parents' lists
    areas = {i["id"]: xv(profile, i) for path in ("/areas", "/areas/powertrain/subareas",
                                                   "/areas/body/subareas")
             for i in on.get(path).json()["items"]}
    assert areas["engine"]["parent_area_id"] == "powertrain"
    assert "parent_area_id" not in areas["powertrain"]
    assert areas["doors"]["ros2"]["namespace"] == "/body/door"
    comps = {i["id"]: xv(profile, i) for path in ("/components",
                                                   "/components/body-ecu/subcomponents")
             for i in on.get(path).json()["items"]}
    door = comps["door-module-fl"]
    assert door["parentComponentId"] == "body-ecu" and door["area"] == "doors"
    assert door["type"] == "module"
    assert comps["brake-ecu"]["dependsOn"] == ["engine-ecu"]
    funcs = {i["id"]: xv(profile, i) for i in on.get("/functions").json()["items"]}
    assert {"temp_sensor", "temp_monitor"} <= set(funcs["engine-monitoring"]["hosts"])


def test_area_relationship_links(on: Gateway, profile: str) -> None:
    sub = on.get("/areas/powertrain/subareas").json()
    assert [i["id"] for i in sub["items"]] == ["engine"]
    assert sub["_links"]["parent"] == "/api/v1/areas/powertrain"
    contains = on.get("/areas/engine/contains").json()
    assert contains["_links"]["area"] == "/api/v1/areas/engine"
    assert {"engine-ecu", "engine-sensor-board"} <= {i["id"] for i in contains["items"]}
    assert xv(profile, contains)["total_count"] == len(contains["items"])


def test_nested_discovery_unknown_id(on: Gateway, profile: str) -> None:
    for path, kind in (("/areas/ghost/subareas", "area"), ("/areas/ghost/contains", "area"),
                       ("/components/ghost/subcomponents", "component"),
                       ("/functions/ghost/hosts", "function")):
        if profile == "medkit":
            body = assert_error(on.get(path), 404, "entity-not-found")
            assert body["message"] == f"{kind.capitalize()} not found"
        else:
            body = assert_error(on.get(path), 404, "resource-not-found")
        assert body["parameters"][f"{kind}_id"] == "ghost"


# --- updates -----------------------------------------------------------------------------------


def test_update_errors_carry_the_vendor_word(on: Gateway, profile: str) -> None:
    body = assert_error(on.get("/updates/ghost/status"), 404, "vendor-error",
                        f"{XV[profile]}-update-not-found")
    assert body["parameters"]["update_id"] == "ghost"
    assert on.get("/updates").json()["items"] == []
