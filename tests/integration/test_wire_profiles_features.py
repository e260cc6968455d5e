"""medkit-wire.md rows that need the demo manifest (areas, nested components and functions,
a lock the manifest requires), in both wire profiles against the demo robot.

One gateway per profile: the demo manifest in hybrid mode. The rows a handler answers over
the fake robot are in the in-process tests of each feature (tests/<feature>/test_inproc_*.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import ROOT, Gateway, assert_error
from tests.integration.wire_support import PROFILES, xv

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "calibration")
MANIFEST = ROOT / "deploy" / "demo_manifest.yaml"
B = {"X-Client-Id": "client-b"}


@pytest.fixture(scope="module")
def gateways(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, Gateway]]:
    tmp = tmp_path_factory.mktemp("wire-features")
    gws: dict[str, Gateway] = {}
    try:
        for profile in PROFILES:
            settings = [f"state_dir={tmp / profile}", "discovery.refresh_debounce_ms=100",
                        "snapshots.enabled=false", f"api.profile={profile}",
                        "discovery.mode=hybrid", f"discovery.manifest_path={MANIFEST}"]
            gws[profile] = Gateway(free_port(), domain, settings, tmp / f"{profile}.log").start()
        for prof, g in gws.items():
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
def on(gateways: dict[str, Gateway], profile: str) -> Gateway:
    return gateways[profile]


# --- locks -------------------------------------------------------------------------------------


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


# --- areas, components, functions -------------------------------------------------------------


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
