"""The demo robot behind the shipped manifest: hybrid mode links the running nodes; an invalid
manifest stops `run`. What the handlers answer over a loaded manifest (relationships,
nameplates, area aggregation, status and health, manifest_only) and each rule's error are
tested in process (tests/discovery/test_inproc_manifest.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import NODES, Robot, ros_env
from tests.conftest import free_port
from tests.discovery.test_inproc_manifest import BOUND, ENTITY, HOSTED, INVALID
from tests.harness import Gateway

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "demo_manifest.yaml"
CSV = ROOT / "deploy" / "demo_inventory.csv"


def start(domain: int, tmp: Path, name: str, mode: str) -> Gateway:
    settings = [f"discovery.mode={mode}", f"discovery.manifest_path={MANIFEST}",
                f"discovery.inventory.csv_path={CSV}", "discovery.refresh_debounce_ms=100",
                f"state_dir={tmp / name}", "topic_sample_timeout_sec=3.0"]
    return Gateway(free_port(), domain, settings, tmp / f"{name}.log").start()


@pytest.fixture(scope="module")
def hybrid(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Gateway]:
    gw = start(domain, tmp_path_factory.mktemp("hybrid"), "hybrid", "hybrid")
    try:
        gw.wait_for("/apps", lambda b: sum(i["x-vendor"]["is_online"] for i in b["items"])
                    >= len(NODES), timeout=40)
        yield gw
    finally:
        gw.stop()


def test_hybrid_links_the_twelve_demo_nodes(hybrid: Gateway) -> None:
    items = {i["id"]: i for i in hybrid.get("/apps").json()["items"]}
    assert set(BOUND) <= set(items)
    for node, (component, ns) in HOSTED.items():
        fqn = f"{ns.rstrip('/')}/{node}"
        assert items[node]["x-vendor"] == {"source": "manifest", "is_online": True,
                                           "component_id": component,
                                           "ros2": {"node": fqn, "namespace": ns}}, node
    # a manifest app without a running node: its component, no ros2 block
    assert items["tire_pressure_monitor"]["x-vendor"] == {"source": "manifest",
                                                          "is_online": False,
                                                          "component_id": "brake-ecu"}
    # nodes the manifest does not declare (policy warn) are heuristic apps
    assert all(i["x-vendor"]["source"] == "heuristic" for k, i in items.items()
               if k not in BOUND and k != "tire_pressure_monitor")
    temp = hybrid.get("/apps/temp_sensor").json()
    assert temp["name"] == "Engine temperature sensor"
    assert temp["x-vendor"]["ros2"]["node"] == "/powertrain/engine/temp_sensor"
    assert temp["x-vendor"]["component_id"] == "engine-sensor-board"
    offline = hybrid.get("/apps/tire_pressure_monitor").json()
    assert offline["x-vendor"]["is_online"] is False and "ros2" not in offline["x-vendor"]
    assert hybrid.get("/apps/tire_pressure_monitor/data").json()["items"] == []


# the CLI's answer is the same for every rule: one manifest rule and the inventory's
STOPPING = ("R007", "INVENTORY_CSV")


def test_an_invalid_manifest_stops_run(tmp_path: Path, domain: int) -> None:
    env = ros_env(domain)
    procs = {}
    for rule in STOPPING:
        text = INVALID[rule]
        path = tmp_path / f"{rule}.yaml"
        path.write_text(text)
        cmd = [sys.executable, "-m", "gateway", "run", "--port", str(free_port()),
               "--domain", str(domain), "--set", "discovery.mode=hybrid",
               "--set", f"discovery.manifest_path={path}", "--set", f"state_dir={tmp_path}/s"]
        if rule == "INVENTORY_CSV":
            (tmp_path / "inv.csv").write_text("name,model\nx,y\n")  # no id column
            cmd += ["--set", f"discovery.inventory.csv_path={tmp_path / 'inv.csv'}"]
        procs[rule] = (path, subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE))
    for rule, (path, proc) in procs.items():
        out, err = proc.communicate(timeout=60)
        text = err.decode()
        assert proc.returncode == 2, (rule, text)
        assert "configuration error: invalid manifest" in text, text
        assert f"[{rule}]" in text, (rule, text)
        if rule in ENTITY:
            assert f"'{ENTITY[rule]}'" in text, (rule, text)
            assert f"(at {path}:" in text, (rule, text)  # the file and the line
        assert b"serving" not in out + err  # nothing served, not even half of it
