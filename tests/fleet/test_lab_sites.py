"""Sites: a fleet primary over a site primary over two robots, in the lab (root only).

The site primary (aggregation.reexport) declares its robots' entities to the fleet primary
and answers its calls for the whole site: reads, forwarding, the fault stream and locks
pass through two levels, and each id is qualified once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fleet.lab import (
    LAN_PORT,
    Lab,
    LabRobot,
    gateway_argv,
    host_env,
    lab_unusable,
    on_host,
    request,
    wait_until,
)
from tests.fleet.test_lab import StreamReader

pytestmark = pytest.mark.integration

FAULT = "LIDAR_RANGE_INVALID"
RECORDER = ["snapshots.rosbag.enabled=true", "snapshots.rosbag.topic_selection=all",
            "snapshots.rosbag.duration_sec=3"]


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, LabRobot]]]:
    why = lab_unusable()
    if why:
        pytest.skip(why)
    logs = tmp_path_factory.mktemp("sites")
    with Lab(["fleet", "site", "r1", "r2"], tag=(os.getpid() + 2) % 100000) as lab:
        robots = {"r1": LabRobot(lab["r1"], logs).start(RECORDER,
                                                        nodes=("temp_sensor", "lidar_sensor")),
                  "r2": LabRobot(lab["r2"], logs).start(nodes=("temp_sensor",))}
        site, fleet = lab["site"], lab["fleet"]
        site.run(gateway_argv("0.0.0.0", LAN_PORT, [
            "aggregation.enabled=true", "aggregation.reexport=true",
            f"aggregation.peer_urls=[{robots['r1'].url},{robots['r2'].url}]",
            "aggregation.peer_names=[r1,r2]", f"state_dir={logs / 'site-state'}"]),
            logs / "site.log", host_env())
        fleet.run(gateway_argv("0.0.0.0", LAN_PORT, [
            "aggregation.enabled=true", f"aggregation.peer_urls=[http://{site.address}:8080]",
            "aggregation.peer_names=[site1]", f"state_dir={logs / 'fleet-state'}"]),
            logs / "fleet.log", host_env())
        top = f"http://{fleet.address}:{LAN_PORT}"
        wait_until(lambda: {a["id"] for a in _get(top, "/apps")["items"]}
                   >= {"r1__temp_sensor", "r2__temp_sensor", "lidar_sensor"}, 90,
                   "the site's robots' apps on the fleet primary")
        yield top, robots


def _get(base: str, path: str) -> Any:
    status, _, body = request("GET", f"{base}/api/v1{path}")
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def test_ids_qualified_once_and_reads_through_two_levels(
        sites: tuple[str, dict[str, LabRobot]]) -> None:
    top, _ = sites
    apps = {a["id"]: a for a in _get(top, "/apps")["items"]}
    # the site renamed its colliding apps; the fleet primary kept those ids as they are
    assert not [a for a in apps if a.startswith("site1__")]
    assert apps["r1__temp_sensor"]["x-vendor"]["contributors"] == ["site1"]
    # a read of a robot's app: fleet primary -> site primary -> robot
    data = _get(top, "/apps/r1__temp_sensor/data")
    assert data["items"], data
    # a merged server list: every gateway of the site answers, through the site
    versions = wait_until(lambda: len(_get(top, "/version-info")["items"]) >= 4, 20,
                          "version-info of fleet, site and both robots")
    assert versions


def test_fault_stream_and_forwarded_clear_through_two_levels(
        sites: tuple[str, dict[str, LabRobot]]) -> None:
    top, _ = sites
    wait_until(lambda: FAULT in {f["fault_code"] for f in _get(
        top, "/apps/lidar_sensor/faults")["items"]}, 30, "r1's fault read through the site")
    stream = StreamReader(top)
    try:
        time.sleep(1.5)  # relays open: fleet -> site -> robot
        status, _, body = request("DELETE", f"{top}/api/v1/apps/lidar_sensor/faults/{FAULT}")
        assert status == 204, body
        wait_until(lambda: [e for e in stream.events
                            if e.get("fault", {}).get("fault_code") == FAULT], 30,
                   "r1's fault event relayed by the site to the fleet primary")
    finally:
        stream.close()


def test_lock_taken_through_two_levels_lives_on_the_robot(
        sites: tuple[str, dict[str, LabRobot]]) -> None:
    top, robots = sites
    status, _, body = request("POST", f"{top}/api/v1/apps/lidar_sensor/locks",
                              body={"lock_expiration": 60},
                              headers={"X-Client-Id": "fleet-operator"})
    assert status == 201, body
    status, locks = on_host(robots["r1"].host, "GET", 8081, "/apps/lidar_sensor/locks")
    assert status == 200 and locks["items"], locks


def test_recording_downloads_through_two_levels(sites: tuple[str, dict[str, LabRobot]]) -> None:
    top, _ = sites
    request("DELETE", f"{top}/api/v1/apps/lidar_sensor/faults/{FAULT}")  # raised again: recorded
    items = wait_until(lambda: _get(top, "/apps/lidar_sensor/bulk-data/rosbags")["items"], 60,
                       "r1's recording listed on the fleet primary")
    rec = items[0]
    status, headers, body = request(
        "GET", f"{top}/api/v1/apps/lidar_sensor/bulk-data/rosbags/{rec['id']}", timeout=60)
    assert status == 200 and len(body) == rec["size"] == int(headers["content-length"])
    assert body[:8] == b"\x89MCAP0\r\n"
