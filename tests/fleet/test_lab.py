"""The fleet lab: three robots as namespaced hosts on one LAN (ROS domain 0 each, mDNS on the
LAN, each robot behind its link emulator) and a primary that discovers them (root only).

Peer beacons, a partition healed with no fault event lost, an address change followed, a
recording downloaded through the primary over a slow, capped link (the robot online while the
download fills its link), and a robot gateway killed and restarted with nothing silently
missing from the primary's stream.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.lab import (
    GATEWAY_PORT,
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

MDNS = ["aggregation.mdns_interfaces=[all]"]
LIDAR = ("temp_sensor", "lidar_sensor")
RECORDER = ["snapshots.rosbag.enabled=true", "snapshots.rosbag.topic_selection=all",
            "snapshots.rosbag.duration_sec=3"]
FAULT = "LIDAR_RANGE_INVALID"  # active from the start on the demo lidar node


def _is_r2_fault(event: dict[str, Any]) -> bool:
    return bool(event.get("fault", {}).get("fault_code") == FAULT
                and event.get("x-vendor", {}).get("peer") == "r2")


@dataclass
class FleetLab:
    lab: Lab
    primary_url: str
    robots: dict[str, LabRobot]
    settings: dict[str, list[str]] | None = None  # a robot's gateway settings (restarts)

    def get(self, path: str, **kw: Any) -> Any:
        status, _, body = request("GET", f"{self.primary_url}/api/v1{path}", **kw)
        assert status == 200, (path, status, body[:300])
        return json.loads(body)

    def peers(self) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in self.get("/health")["peers"]}


@pytest.fixture(scope="module")
def fleet_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetLab]:
    why = lab_unusable()
    if why:
        pytest.skip(why)
    logs = tmp_path_factory.mktemp("lab")
    with Lab(["primary", "r1", "r2", "r3"]) as lab:
        robots = {
            "r1": LabRobot(lab["r1"], logs).start(["aggregation.announce=true", *MDNS]),
            "r2": LabRobot(lab["r2"], logs).start(
                ["aggregation.announce=true", *MDNS, *RECORDER], nodes=LIDAR),
            "r3": LabRobot(lab["r3"], logs).start(["aggregation.announce=true", *MDNS]),
        }
        host = lab["primary"]
        host.run(gateway_argv("0.0.0.0", LAN_PORT, [
            "aggregation.enabled=true", "aggregation.discover=true", *MDNS,
            "aggregation.mdns_name=primary", f"state_dir={logs / 'primary-state'}"]),
            logs / "primary.log", host_env())
        fl = FleetLab(lab, f"http://{host.address}:{LAN_PORT}", robots)
        fl.settings = {"r2": ["aggregation.announce=true", *MDNS, *RECORDER]}
        wait_until(lambda: fl.peers().keys() >= set(robots) and all(
            p["status"] == "online" for p in fl.peers().values()), 120, "robots to join")
        yield fl


@contextlib.contextmanager
def _stopped(robot: LabRobot) -> Iterator[None]:
    pid = robot.gateway.pid  # type: ignore[union-attr]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_idle_peers_followed_by_their_beacons(fleet_lab: FleetLab) -> None:
    r1 = fleet_lab.robots["r1"]
    # the robot's beacon: its entity ETag every interval, as a primary reads it
    conn = http.client.HTTPConnection(r1.host.address, LAN_PORT, timeout=10)
    try:
        conn.request("GET", "/api/v1/x-vendor-beacon?interval_ms=200")
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
        t0 = time.monotonic()
        lines = []
        while len(lines) < 4:
            line = resp.fp.readline().decode().strip()
            if line.startswith("data: "):
                lines.append(line[6:])
        assert time.monotonic() - t0 >= 0.5  # paced by the interval
    finally:
        conn.close()
    _, headers, _ = request("GET", f"{r1.url}/api/v1/x-vendor-entities")
    assert set(lines) == {headers["etag"]}
    status, _, body = request("GET", f"{r1.url}/api/v1/x-vendor-beacon?interval_ms=5")
    assert status == 400
    assert json.loads(body)["error_code"] == "invalid-parameter"
    # the primary follows every idle robot by its beacon
    wait_until(lambda: all(p["x-vendor"]["beacon"] for p in fleet_lab.peers().values()), 30,
               "beacons")
    # a stopped robot is offline as fast as with probes; back with its beacon once resumed
    with _stopped(r1):
        t0 = time.monotonic()
        wait_until(lambda: fleet_lab.peers()["r1"]["status"] == "offline", 10, "r1 offline",
                   every=0.02)
        print(f"\nstopped robot offline after {time.monotonic() - t0:.2f} s")
    wait_until(lambda: fleet_lab.peers()["r1"]["status"] == "online"
               and fleet_lab.peers()["r1"]["x-vendor"]["beacon"], 20, "r1 back with its beacon")


def test_partition_heals_with_no_fault_event_lost(fleet_lab: FleetLab) -> None:
    r2 = fleet_lab.robots["r2"]
    stream = EventStream(fleet_lab.primary_url)
    try:
        time.sleep(1.0)  # the relays open while a client is attached
        assert r2.link_command("partition on") == "ok"
        t0 = time.monotonic()
        wait_until(lambda: fleet_lab.peers()["r2"]["status"] == "offline", 15, "r2 offline")
        print(f"\npartitioned robot offline after {time.monotonic() - t0:.2f} s")
        # a fault cleared on the robot while nobody can reach it (the node raises it again)
        seen = len(stream.events)
        status, body = on_host(r2.host, "DELETE", 8081, f"/apps/lidar_sensor/faults/{FAULT}")
        assert status == 204, body
        time.sleep(2.0)
        assert not [e for e in stream.events[seen:] if _is_r2_fault(e)]
        assert r2.link_command("partition off") == "ok"
        t0 = time.monotonic()
        wait_until(lambda: fleet_lab.peers()["r2"]["status"] == "online", 15, "r2 online")
        print(f"healed robot online after {time.monotonic() - t0:.2f} s")
        # the relay resumed from its Last-Event-ID: the event raised meanwhile arrives
        wait_until(lambda: [e for e in stream.events[seen:] if _is_r2_fault(e)], 20,
                   "the partitioned robot's fault event on the primary's stream")
    finally:
        stream.close()
        r2.link_command("partition off")


def test_address_change_followed(fleet_lab: FleetLab) -> None:
    r3 = fleet_lab.robots["r3"]
    new = fleet_lab.lab.free_address()
    fleet_lab.lab.move(r3.host, new)
    t0 = time.monotonic()
    wait_until(lambda: fleet_lab.peers()["r3"]["url"] == f"http://{new}:{LAN_PORT}"
               and fleet_lab.peers()["r3"]["status"] == "online", 30, "r3 at its new address")
    took = time.monotonic() - t0
    print(f"\naddress change followed after {took:.2f} s")
    assert took <= 5.0
    apps = {a["id"] for a in fleet_lab.get("/apps")["items"]}
    assert any("temp_sensor" in a for a in apps)


def test_recording_downloads_through_the_primary_over_a_capped_link(fleet_lab: FleetLab,
                                                                    tmp_path: Path) -> None:
    r2 = fleet_lab.robots["r2"]
    on_host(r2.host, "DELETE", 8081, f"/apps/lidar_sensor/faults/{FAULT}")  # raised again

    def recordings() -> list[dict[str, Any]]:
        return fleet_lab.get("/apps/lidar_sensor/bulk-data/rosbags")["items"]  # type: ignore
    items = wait_until(recordings, 60, "a recording of r2's fault, listed on the primary")
    rec = items[0]
    direct_status, direct = on_host_bytes(r2, f"/apps/lidar_sensor/bulk-data/rosbags/"
                                              f"{rec['id']}")
    assert direct_status == 200
    rate = 2_000_000
    r2.link_command(f"set rtt_ms=80 rate_bps={rate}")
    try:
        t0 = time.monotonic()
        status, headers, body = request(
            "GET", f"{fleet_lab.primary_url}/api/v1/apps/lidar_sensor/bulk-data/rosbags/"
                   f"{rec['id']}", timeout=120)
        took = time.monotonic() - t0
        assert status == 200, body[:300]
        assert hashlib.sha256(body).digest() == hashlib.sha256(direct).digest()
        assert int(headers["content-length"]) == len(body) == rec["size"]
        floor = len(body) * 8 / rate
        print(f"\n{len(body)} bytes through the primary over 2 Mbit/s, 80 ms RTT: "
              f"{took:.2f} s ({floor / took:.0%} of the link)")
        assert took >= floor  # the cap held
        # resumable: the rest after a cut, by Range, through the primary
        half = len(body) // 2
        status, headers, tail = request(
            "GET", f"{fleet_lab.primary_url}/api/v1/apps/lidar_sensor/bulk-data/rosbags/"
                   f"{rec['id']}", headers={"Range": f"bytes={half}-"}, timeout=120)
        assert status == 206 and tail == body[half:]
    finally:
        r2.link_command("set rtt_ms=0 rate_bps=0")


def test_a_robot_stays_online_while_its_link_is_full_of_a_download(fleet_lab: FleetLab
                                                                   ) -> None:
    # A recording downloaded through the primary fills the robot's slow link for seconds: the
    # primary's probes and beacon lines wait behind it. The robot is answering (its bytes
    # keep coming), so it stays online and other reads still reach it after.
    r2 = fleet_lab.robots["r2"]
    rec = wait_until(lambda: fleet_lab.get("/apps/lidar_sensor/bulk-data/rosbags")["items"],
                     60, "a recording of r2's fault, listed on the primary")[0]
    rate = max(8000, rec["size"] * 8 // 4)  # about 4 s for the whole recording
    seen: list[str] = []
    got: dict[str, Any] = {}

    def download() -> None:
        got["answer"] = request(
            "GET", f"{fleet_lab.primary_url}/api/v1/apps/lidar_sensor/bulk-data/rosbags/"
                   f"{rec['id']}", timeout=120)
    r2.link_command(f"set rtt_ms=80 rate_bps={rate}")
    try:
        worker = threading.Thread(target=download)
        worker.start()
        while worker.is_alive():
            seen.append(fleet_lab.peers()["r2"]["status"])
            worker.join(0.1)
    finally:
        r2.link_command("set rtt_ms=0 rate_bps=0")
    status, _headers, body = got["answer"]
    assert status == 200 and len(body) == rec["size"]
    assert seen and set(seen) == {"online"}, seen
    assert fleet_lab.peers()["r2"]["x-vendor"].get("probes_passed_by_transfer", 0) > 0


def test_a_robot_killed_and_restarted_leaves_no_silent_gap(fleet_lab: FleetLab) -> None:
    # What the killed process emitted after the relay's last event is gone: the primary's
    # stream says so with a refetch naming the robot (its clients read the list again), and
    # the relay then carries the restarted robot's events.
    r2 = fleet_lab.robots["r2"]
    assert r2.gateway is not None and fleet_lab.settings is not None
    stream = EventStream(fleet_lab.primary_url)
    try:
        wait_until(lambda: on_host(r2.host, "GET", GATEWAY_PORT, "/health")[1]
                   ["x-vendor-sse"]["connected_clients"] >= 1, 30, "the relay from r2 open")
        os.killpg(r2.gateway.pid, signal.SIGKILL)
        r2.gateway.wait(10)
        wait_until(lambda: fleet_lab.peers()["r2"]["status"] == "offline", 20, "r2 offline")
        seen = len(stream.events)
        r2.gateway = r2.host.run(gateway_argv("127.0.0.1", GATEWAY_PORT, [
            f"state_dir={r2.logs / 'r2-state'}", f"aggregation.announce_port={LAN_PORT}",
            *fleet_lab.settings["r2"]]), r2.logs / "r2.gateway.log", host_env())
        wait_until(lambda: fleet_lab.peers()["r2"]["status"] == "online", 60, "r2 back online")

        def refetch() -> bool:
            return any(e.get("event_type") == "refetch"
                       and e.get("x-vendor", {}).get("peer") == "r2"
                       for e in stream.events[seen:])
        wait_until(refetch, 30, "a refetch naming r2 on the primary's stream")
        # and the relay carries what the new process emits: once the restarted gateway knows
        # the lidar app again (it answers while discovery still runs, and an app it has not
        # discovered yet is a 404), clearing the fault is an event on the primary's stream
        fault_path = f"/apps/lidar_sensor/faults/{FAULT}"
        wait_until(lambda: on_host(r2.host, "GET", GATEWAY_PORT, fault_path)[0] == 200, 60,
                   "the restarted r2 gateway holding the lidar fault")
        after = len(stream.events)
        status, body = on_host(r2.host, "DELETE", GATEWAY_PORT, fault_path)
        assert status == 204, body
        wait_until(lambda: [e for e in stream.events[after:] if _is_r2_fault(e)], 30,
                   "the restarted robot's fault events on the primary's stream")
    finally:
        stream.close()


def on_host_bytes(robot: LabRobot, path: str) -> tuple[int, bytes]:
    """A GET made on the robot's own loopback, body as bytes."""
    import subprocess
    import sys

    code = ("import sys, http.client\n"
            "c = http.client.HTTPConnection('127.0.0.1', 8081, timeout=60)\n"
            "c.request('GET', sys.argv[1]); r = c.getresponse(); d = r.read()\n"
            "sys.stdout.write(str(r.status) + '\\n'); sys.stdout.flush()\n"
            "sys.stdout.buffer.write(d)\n")
    done = subprocess.run(["ip", "netns", "exec", robot.host.ns, sys.executable, "-c", code,
                           "/api/v1" + path], capture_output=True, timeout=90, check=True)
    status, _, body = done.stdout.partition(b"\n")
    return int(status), body
