"""Conformance against the demo robot behind the shipped manifest, in both wire profiles, where
real processes answer: the watchdog app's faults, /health's executor block, log and recording
ids. The handler answers over the manifest (relationships, the function graph, lifecycle, the
OpenAPI document, each profile's wording) are tested in process
(tests/discovery/test_inproc_manifest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import NODES, Robot
from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "demo_manifest.yaml"
PROFILES = ("spec", "medkit")
XV = {"spec": "x-vendor", "medkit": "x-medkit"}


def start(domain: int, tmp: Path, name: str, manifest: Path, *extra: str) -> Gateway:
    settings = ["discovery.mode=hybrid", f"discovery.manifest_path={manifest}",
                "discovery.refresh_debounce_ms=100", f"state_dir={tmp / name}",
                "parameter_service_timeout_sec=5", *extra]
    return Gateway(free_port(), domain, settings, tmp / f"{name}.log").start()


@pytest.fixture(scope="module")
def gateways(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, Gateway]]:
    tmp = tmp_path_factory.mktemp("conformance")
    gws: dict[str, Gateway] = {}
    try:
        for profile in PROFILES:
            gws[profile] = start(
                domain, tmp, profile, MANIFEST, f"api.profile={profile}",
                "plugins=[graph_provider,graph_watchdog]",
                "plugins.graph_watchdog.warmup_cycles=2",
                "plugins.graph_watchdog.tick_interval_ms=500",
                "snapshots.rosbag.enabled=true", "snapshots.rosbag.duration_sec=1",
                "snapshots.rosbag.duration_after_sec=1")
        for profile, g in gws.items():
            g.wait_for("/apps", lambda b, p=profile: sum(
                i[XV[p]]["is_online"] for i in b["items"]) >= len(NODES), timeout=40)
        yield gws
    finally:
        for g in gws.values():
            g.stop()


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def gw(gateways: dict[str, Gateway], profile: str) -> Gateway:
    return gateways[profile]


# --- the watchdog is an app -------------------------------------------------------------------


def test_watchdog_faults_belong_to_its_app(gw: Gateway, profile: str) -> None:
    app = gw.get("/apps/graph_watchdog").json()
    host = app[XV[profile]]["component_id"]
    fault = "/apps/graph_watchdog/faults/GRAPH_QOS_MISMATCH"
    gw.wait_for(fault, lambda b: b["item"]["code"] == "GRAPH_QOS_MISMATCH", timeout=40)
    under_host = gw.get(f"/components/{host}/faults").json()
    assert "GRAPH_QOS_MISMATCH" in {i["fault_code"] for i in under_host["items"]}
    assert gw.request("DELETE", fault).status == 204  # cleared (the next sweep raises it again)
    assert gw.get("/apps/graph_watchdog/faults/NO_SUCH_CODE").status == 404


# --- server ------------------------------------------------------------------------------------


def test_health_executor_fields(gw: Gateway, profile: str) -> None:
    executor = gw.get("/health").json()[f"{XV[profile]}-subscription-executor"]
    assert {"worker_alive", "degraded", "queue_depth", "queue_max_depth_observed",
            "queue_dropped", "tasks_completed", "tasks_failed", "last_task_latency_us",
            "max_task_latency_us", "current_task_age_ms", "watchdog_trips",
            "graph_events_received"} <= set(executor)
    assert executor["queue_max_depth_observed"] >= executor["queue_depth"] >= 0
    assert all(isinstance(executor[k], int) and executor[k] >= 0 for k in (
        "queue_dropped", "watchdog_trips", "current_task_age_ms"))


# --- wording and names per profile ------------------------------------------------------------


def test_log_and_recording_id_prefixes(gw: Gateway, profile: str) -> None:
    logs = gw.wait_for("/apps/temp_sensor/logs", lambda b: b["items"], timeout=30)["items"]
    recs = gw.wait_for("/apps/lidar_sensor/bulk-data/rosbags", lambda b: b["items"],
                       timeout=40)["items"]
    if profile == "medkit":
        assert all(e["id"].startswith("log_") and e["id"][4:].isdigit() for e in logs)
        assert all(r["id"].startswith("fault_") for r in recs)
    else:
        assert all(e["id"].isdigit() for e in logs)
        assert all(r["id"].startswith("rec_") for r in recs)
    rec = recs[0]
    assert gw.get(f"/apps/lidar_sensor/bulk-data/rosbags/{rec['id']}").status == 200
    code = rec[XV[profile]]["fault_codes"][0]
    detail = gw.get(f"/apps/lidar_sensor/faults/{code}").json()
    bags = [s for s in detail["environment_data"]["snapshots"] if s["type"] == "rosbag"]
    assert bags and all(b[XV[profile]]["captured_at"].endswith("Z") for b in bags)
