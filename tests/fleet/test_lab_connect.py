"""A robot the primary cannot reach joins it by connecting out (lab; root only).

The robot's gateway listens on its own loopback only and nothing relays its port to the LAN:
the primary has no way in. The robot opens a tunnel to the primary (aggregation.connect_to,
authenticated by aggregation.connect_token); the primary reads, forwards and streams
through it as with any peer.
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
    EventStream,
    Lab,
    LabRobot,
    gateway_argv,
    host_env,
    lab_unusable,
    on_host,
    request,
    wait_until,
)

pytestmark = pytest.mark.integration

TOKEN = "lab-connect-secret-" + str(os.getpid())
FAULT = "LIDAR_RANGE_INVALID"


@pytest.fixture(scope="module")
def nat_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, LabRobot, str]]:
    why = lab_unusable()
    if why:
        pytest.skip(why)
    logs = tmp_path_factory.mktemp("natlab")
    with Lab(["primary", "r4"], tag=(os.getpid() + 1) % 100000) as lab:
        host = lab["primary"]
        primary = f"http://{host.address}:{LAN_PORT}"
        host.run(gateway_argv("0.0.0.0", LAN_PORT, [
            "aggregation.enabled=true", f"aggregation.connect_token={TOKEN}",
            f"state_dir={logs / 'primary-state'}"]), logs / "primary.log", host_env())
        wait_until(lambda: request("GET", f"{primary}/api/v1/health")[0] == 200, 60, "primary")
        robot = LabRobot(lab["r4"], logs).start(
            [f"aggregation.connect_to={primary}", f"aggregation.connect_token={TOKEN}",
             "aggregation.mdns_name=r4"], nodes=("temp_sensor", "lidar_sensor"), link=False)
        yield lab, robot, primary


def _get(primary: str, path: str) -> Any:
    status, _, body = request("GET", f"{primary}/api/v1{path}")
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def test_unreachable_robot_joins_by_connecting_out(nat_lab: tuple[Lab, LabRobot, str]) -> None:
    lab, robot, primary = nat_lab
    # nothing on the robot's host answers from the LAN
    for port in (LAN_PORT, 8081):
        with pytest.raises(OSError):
            request("GET", f"http://{robot.host.address}:{port}/api/v1/health", timeout=3)
    wait_until(lambda: {p["name"]: p for p in _get(primary, "/health")["peers"]}
               .get("r4", {}).get("status") == "online", 60, "r4 online through its tunnel")
    # reads: its entities and a merged collection
    apps = wait_until(lambda: {a["id"] for a in _get(primary, "/apps")["items"]}
                      >= {"temp_sensor", "lidar_sensor"}, 30, "r4's apps on the primary")
    assert apps
    app = next(a for a in _get(primary, "/apps")["items"] if a["id"] == "lidar_sensor")
    assert app["x-vendor"]["contributors"] == ["r4"]
    data = _get(primary, "/apps/temp_sensor/data")
    assert data["items"], data
    # the beacon (a stream) runs through the tunnel too
    wait_until(lambda: _get(primary, "/health")["peers"][0]["x-vendor"]["beacon"], 20,
               "r4's beacon")
    # forwarding and the fault stream: a clear forwarded to r4, its events relayed back
    wait_until(lambda: FAULT in {f["fault_code"] for f in _get(
        primary, "/apps/lidar_sensor/faults")["items"]}, 30, "r4's fault read through the tunnel")
    stream = EventStream(primary)
    try:
        time.sleep(1.0)
        status, _, body = request("DELETE", f"{primary}/api/v1/apps/lidar_sensor/faults/{FAULT}")
        assert status == 204, body
        wait_until(lambda: [e for e in stream.events
                            if e.get("fault", {}).get("fault_code") == FAULT
                            and e.get("x-vendor", {}).get("peer") == "r4"], 30,
                   "r4's fault event on the primary's stream")
    finally:
        stream.close()
    # the tunnel's end is the robot's gateway: it saw the clear as a local request
    status, faults = on_host(robot.host, "GET", 8081, "/faults")
    assert status == 200


def test_wrong_token_refused(nat_lab: tuple[Lab, LabRobot, str]) -> None:
    _, _, primary = nat_lab
    status, _, body = request("GET", f"{primary}/api/v1/x-vendor-connect?name=intruder",
                              headers={"X-Vendor-Connect-Token": "guess"})
    assert status == 401
    assert json.loads(body)["error_code"] == "unauthorized"
    names = {p["name"] for p in _get(primary, "/health")["peers"]}
    assert "intruder" not in names
    status, _, body = request("GET", f"{primary}/api/v1/x-vendor-connect?name=a__b",
                              headers={"X-Vendor-Connect-Token": TOKEN})
    assert status == 400 and json.loads(body)["error_code"] == "invalid-parameter"


def test_robot_stays_listed_offline_when_its_tunnel_closes(
        nat_lab: tuple[Lab, LabRobot, str]) -> None:
    _, robot, primary = nat_lab
    assert robot.gateway is not None
    robot.host.stop(robot.gateway)
    # listed offline with its apps until it reconnects (aggregation.connect_hold_ms)
    wait_until(lambda: {p["name"]: p for p in _get(primary, "/health")["peers"]}
               .get("r4", {}).get("x-vendor", {}).get("tunnel") == "closed", 30,
               "r4 listed offline with its tunnel closed")
    apps = {a["id"]: a["x-vendor"] for a in _get(primary, "/apps")["items"]}
    assert apps["lidar_sensor"]["is_online"] is False, apps
    assert apps["lidar_sensor"]["available"] is False, apps
