"""A manifest edited while the gateway runs: the four unmanifested-node policies, atomic
reloads (an invalid edit keeps the old set), CSV bad rows and dangling references."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "rpm_sensor", "lidar_sensor")
ORPHANS = ["/perception/lidar/lidar_sensor", "/powertrain/engine/rpm_sensor"]
MANIFEST = """\
manifest_version: "1.0"
metadata: {{name: reload-test, version: "{version}"}}
config: {{unmanifested_nodes: {policy}}}
areas:
  - id: powertrain
{extra_area}components:
  - id: ecu
    area: powertrain
    depends_on: [gearbox-ecu]
apps:
  - id: engine-temp
    is_located_on: ecu
    ros_binding: {{node_name: temp_sensor}}
"""
CSV = """\
id,manufacturer,model,serial,area
pump,Grundfos,CR-5,GP-1,powertrain
,Nobody,X,S0,powertrain
bad id,Acme,Y,S1,
pump,Dup,Z,S2,
fan,Acme,F-2,S3,nowhere
"""


def write(path: Path, text: str) -> None:
    """Replace the file atomically (what an editor or deployment tool does)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def manifest(policy: str = "warn", version: str = "1", extra_area: str = "") -> str:
    return MANIFEST.format(policy=policy, version=version, extra_area=extra_area)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reload")
    out = {"manifest": root / "manifest.yaml", "csv": root / "inventory.csv", "root": root}
    write(out["manifest"], manifest())
    write(out["csv"], CSV)
    return out


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, files: dict[str, Path]) -> Iterator[Gateway]:
    root = files["root"]
    settings = ["discovery.mode=hybrid", f"discovery.manifest_path={files['manifest']}",
                f"discovery.inventory.csv_path={files['csv']}",
                "discovery.manifest.watch_interval_ms=100", "discovery.refresh_debounce_ms=100",
                f"state_dir={root / 'state'}"]
    with Gateway(free_port(), domain, settings, root / "gateway.log") as g:
        g.wait_for("/health", lambda b: b["discovery"]["linking"]["linked_count"] == 1
                   and b["discovery"]["linking"]["orphan_count"] == 2, timeout=30)
        yield g


def apps(gw: Gateway) -> dict[str, Any]:
    return {i["id"]: i for i in gw.get("/apps").json()["items"]}


def unmanifested(health: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in health["warnings"] if w["code"] == "unmanifested_nodes"]


def set_policy(gw: Gateway, files: dict[str, Path], policy: str) -> dict[str, Any]:
    write(files["manifest"], manifest(policy))
    return gw.wait_for(  # type: ignore[no-any-return]
        "/health", lambda b: b["discovery"]["linking"]["unmanifested_policy"] == policy,
        timeout=20)


def test_policy_warn_keeps_orphans_and_lists_them(gw: Gateway, files: dict[str, Path]) -> None:
    health = set_policy(gw, files, "warn")
    linking = health["discovery"]["linking"]
    assert linking["orphan_count"] == 2
    assert linking["warnings"] == [f"Unmanifested node '{f}'" for f in ORPHANS]
    assert unmanifested(health) == []
    found = apps(gw)
    assert found["engine-temp"]["x-vendor"] == {
        "source": "manifest", "is_online": True, "component_id": "ecu",
        "ros2": {"node": "/powertrain/engine/temp_sensor", "namespace": "/powertrain/engine"}}
    assert found["rpm_sensor"]["x-vendor"]["source"] == "heuristic"
    assert "temp_sensor" not in found  # the linked node's runtime app is the manifest app


def test_policy_error_raises_a_health_warning_with_node_names(gw: Gateway,
                                                              files: dict[str, Path]) -> None:
    health = set_policy(gw, files, "error")
    (warning,) = unmanifested(health)
    assert warning["ros_node_fqns"] == ORPHANS
    assert sorted(warning["entity_ids"]) == ["lidar_sensor", "rpm_sensor"]
    assert warning["peer_names"] == []
    assert "rpm_sensor" in warning["message"]
    assert {"rpm_sensor", "lidar_sensor"} <= set(apps(gw))


def test_policy_include_as_orphan(gw: Gateway, files: dict[str, Path]) -> None:
    health = set_policy(gw, files, "include_as_orphan")
    assert unmanifested(health) == [] and "warnings" not in health["discovery"]["linking"]
    assert {"rpm_sensor", "lidar_sensor", "engine-temp"} <= set(apps(gw))


def test_policy_ignore_drops_unmanifested_nodes(gw: Gateway, files: dict[str, Path]) -> None:
    health = set_policy(gw, files, "ignore")
    assert health["discovery"]["linking"]["orphan_count"] == 2
    assert set(apps(gw)) == {"engine-temp"}
    assert gw.get("/apps/rpm_sensor").status == 404
    set_policy(gw, files, "warn")


def test_inherit_false_links_without_the_nodes_resources(gw: Gateway,
                                                         files: dict[str, Path]) -> None:
    assert gw.get("/apps/engine-temp/data").json()["items"]  # inherited by default
    write(files["manifest"], manifest(version="1b").replace(
        "unmanifested_nodes: warn}", "unmanifested_nodes: warn, inherit_runtime_resources: false}"))
    gw.wait_for("/manifest/status", lambda b: b["metadata"]["version"] == "1b", timeout=20)
    assert gw.get("/apps/engine-temp/data").json()["items"] == []
    detail = gw.get("/apps/engine-temp").json()
    assert detail["x-vendor"]["is_online"] is True
    assert detail["x-vendor"]["ros2"]["node"] == "/powertrain/engine/temp_sensor"
    status = gw.get("/apps/engine-temp/status").json()
    assert status["x-vendor"]["is_online"] is True and status["status"] == "ready"
    write(files["manifest"], manifest())
    gw.wait_for("/apps/engine-temp/data", lambda b: b["items"], timeout=20)


def test_an_edit_while_running_becomes_the_new_entity_set(gw: Gateway,
                                                          files: dict[str, Path]) -> None:
    before = gw.get("/manifest/status").json()
    generation = gw.get("/health").json()["x-vendor-entity-cache"]["generation"]
    write(files["manifest"], manifest(version="2", extra_area="  - id: chassis\n"))
    gw.wait_for("/areas", lambda b: [i["id"] for i in b["items"]] == ["powertrain", "chassis"],
                timeout=20)
    status = gw.get("/manifest/status").json()
    assert status["metadata"]["version"] == "2"
    assert status["reloads"] > before["reloads"]
    assert status["entity_counts"]["areas"] == 2
    assert gw.get("/health").json()["x-vendor-entity-cache"]["generation"] > generation


def test_an_invalid_edit_keeps_the_old_set_whole(gw: Gateway, files: dict[str, Path]) -> None:
    write(files["manifest"], manifest(version="3", extra_area="  - id: body\n"))
    gw.wait_for("/areas", lambda b: [i["id"] for i in b["items"]] == ["powertrain", "body"],
                timeout=20)
    # a new area and an app placed on an unknown component (R007): nothing of it is served
    broken = manifest(version="4", extra_area="  - id: perception\n") + (
        "  - id: lidar\n    is_located_on: ghost-ecu\n")
    write(files["manifest"], broken)
    status = gw.wait_for("/manifest/status", lambda b: "last_reload" in b, timeout=20)
    (error,) = status["last_reload"]["errors"]
    assert error["rule"] == "R007" and error["entity_id"] == "lidar"
    assert error["file"] == str(files["manifest"]) and error["line"] > 0
    assert status["metadata"]["version"] == "3"  # the previous manifest still serves
    assert [i["id"] for i in gw.get("/areas").json()["items"]] == ["powertrain", "body"]
    assert gw.get("/apps/lidar").status == 404
    write(files["manifest"], manifest(version="5"))
    gw.wait_for("/manifest/status", lambda b: "last_reload" not in b
                and b["metadata"]["version"] == "5", timeout=20)


def test_csv_bad_rows_are_reported_and_skipped(gw: Gateway) -> None:
    skipped = gw.get("/manifest/status").json()["inventory"]["skipped_rows"]
    assert [(s["line"], s["reason"].split(" (")[1].split(" ")[0]) for s in skipped] == [
        (3, "empty"), (4, "id"), (5, "duplicate")]
    comps = {i["id"]: i for i in gw.get("/components").json()["items"]}
    assert comps["pump"]["x-vendor"]["source"] == "inventory"
    assert comps["pump"]["name"] == "Grundfos CR-5"
    fan = gw.get("/components/fan").json()  # unknown area: kept without a placement
    assert "area" not in fan["_links"]
    assert [i["id"] for i in gw.get("/areas/powertrain/contains").json()["items"]] == [
        "ecu", "pump"]


def test_dangling_references_are_marked_missing(gw: Gateway) -> None:
    deps = gw.get("/components/ecu/depends-on").json()
    assert deps["items"] == [{"id": "gearbox-ecu", "name": "gearbox-ecu", "type": "component",
                              "x-vendor": {"missing": True}}]
    assert deps["_links"] == {"self": "/api/v1/components/ecu/depends-on",
                              "component": "/api/v1/components/ecu"}
    # an orphan app has no host component: is-located-on and belongs-to answer 0 items
    assert gw.get("/apps/rpm_sensor/is-located-on").json()["items"] == []
    assert gw.get("/apps/rpm_sensor/belongs-to").json()["items"] == []
