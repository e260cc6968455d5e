"""The rosbag black box against the real demo lidar: a confirmed fault's recording, downloaded
through the API and read by two independent readers; sqlite3; restart recovery; `bag pull`."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcap.reader import make_reader
from mcap.records import Schema
from mcap_ros2.decoder import DecoderFactory
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from gateway.demo.robot import Robot, ros_env
from tests.conftest import free_port
from tests.harness import ROOT, Gateway

pytestmark = pytest.mark.integration

CODE = "LIDAR_RANGE_INVALID"
SCAN = "/perception/lidar/scan"
SCAN_TYPE = "sensor_msgs/msg/LaserScan"
FAULT = f"/apps/lidar_sensor/faults/{CODE}"
SETTINGS = ["snapshots.rosbag.enabled=true", "snapshots.rosbag.duration_sec=2",
            "snapshots.rosbag.duration_after_sec=1", "discovery.refresh_debounce_ms=100",
            "snapshots.enabled=false"]


ROBOT_NODES = ("lidar_sensor",)
def gateway(domain: int, state: Path, *extra: str) -> Gateway:
    """A gateway (not started yet) with the recorder on and short windows."""
    return Gateway(free_port(), domain, [f"state_dir={state}", *SETTINGS, *extra],
                   state.parent / f"gateway-{time.monotonic_ns()}.log")


def ns_of(iso: str) -> int:
    t = dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
    return int(t.timestamp() * 1000) * 1_000_000


def recording_with_history(gw: Gateway) -> dict[str, Any]:
    """The fault's recording made once the buffer holds data: clear it, let it reconfirm."""
    gw.wait_for("/health", lambda b: b["x-vendor-recorder"]["buffer"]["messages"] >= 10,
                timeout=30)
    gw.wait_for(FAULT, lambda b: b["item"]["status"]["confirmedDTC"] == "1", timeout=30)
    # Every window open now is written first: a fault confirming again while a window is open
    # joins that window, whose recording (and creation_date) predates the clear.
    gw.wait_for("/health", lambda b: b["x-vendor-recorder"]["open_windows"] == 0
                and b["x-vendor-recorder"]["writing"] == 0, timeout=30)
    before = {d["id"] for d in gw.get("/apps/lidar_sensor/bulk-data/rosbags").json()["items"]}
    assert gw.request("DELETE", FAULT).status == 204

    def fresh(body: dict[str, Any]) -> bool:
        return any(CODE in d["x-vendor"]["fault_codes"] and d["id"] not in before
                   for d in body["items"])

    body = gw.wait_for("/apps/lidar_sensor/bulk-data/rosbags", fresh, timeout=30)
    return next(d for d in body["items"] if CODE in d["x-vendor"]["fault_codes"])


def check_scans(times_and_frames: list[tuple[int, str]], trigger_ns: int) -> None:
    times = [t for t, _ in times_and_frames]
    assert times == sorted(times), "messages are in receive order"
    assert {f for _, f in times_and_frames} == {"lidar"}
    assert sum(t < trigger_ns for t in times) >= 3, "scans from before the confirmation"
    assert sum(t > trigger_ns for t in times) >= 2, "scans from after the confirmation"


def test_mcap_recording_of_a_confirmed_fault(robot: Robot, domain: int,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("mcap")
    state = tmp / "state"
    gw = gateway(domain, state).start()
    try:
        desc = recording_with_history(gw)
        rec_id = desc["id"]
        assert desc["x-vendor"]["recording_id"] == rec_id and desc["name"] == f"{rec_id}.mcap"
        assert desc["x-vendor"]["format"] == "mcap" and desc["mimetype"] == "application/x-mcap"
        assert desc["x-vendor"]["duration_sec"] == 3.0
        detail = gw.get(FAULT).json()
        bags = [s for s in detail["environment_data"]["snapshots"] if s["type"] == "rosbag"]
        assert bags == [{"type": "rosbag", "name": f"{rec_id}.mcap",
                         "bulk_data_uri": f"/apps/lidar_sensor/bulk-data/rosbags/{rec_id}",
                         "size_bytes": desc["size"], "duration_sec": 3.0, "format": "mcap",
                         "x-vendor": {"captured_at": desc["creation_date"]}}]
        by_id = gw.get(f"/apps/lidar_sensor/bulk-data/rosbags/{rec_id}")
        by_code = gw.get(f"/apps/lidar_sensor/bulk-data/rosbags/{CODE}")
        assert by_id.status == by_code.status == 200 and by_id.body == by_code.body
        assert len(by_id.body) == desc["size"]
        assert by_id.headers["content-type"] == "application/x-mcap"
        assert by_id.headers["content-disposition"] == f"attachment; filename={rec_id}.mcap"
        path = tmp / f"{rec_id}.mcap"
        path.write_bytes(by_id.body)
        trigger = ns_of(desc["creation_date"])

        # reader 1: mcap + mcap-ros2-support
        with open(path, "rb") as f:
            reader = make_reader(f, decoder_factories=[DecoderFactory()])
            got = [(sch, ch, msg, ros) for sch, ch, msg, ros in reader.iter_decoded_messages(
                log_time_order=False)]
        scans = [(m.log_time, r.header.frame_id) for s, c, m, r in got if c.topic == SCAN]
        assert all(s.name == SCAN_TYPE and s.encoding == "ros2msg" for s, c, _, _ in got
                   if c.topic == SCAN)
        assert all(len(r.ranges) == 360 for _, c, _, r in got if c.topic == SCAN)
        assert all(c.metadata["topic_type_hash"].startswith("RIHS01_") and
                   "reliability" in c.metadata["offered_qos_profiles"] for _, c, _, _ in got)
        check_scans(scans, trigger)

        # reader 2: rosbags, its own MCAP parser and CDR deserializer
        store = get_typestore(Stores.EMPTY)
        mcap = McapReader(path)
        mcap.open()
        try:
            (conn,) = [c for c in mcap.connections if c.topic == SCAN]
            assert conn.msgtype == SCAN_TYPE
            assert conn.ext.offered_qos_profiles, "publisher QoS recorded"
            store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
            scans2 = [(t, store.deserialize_cdr(raw, conn.msgtype).header.frame_id)
                      for _, t, raw in mcap.messages([conn])]
        finally:
            mcap.close()
        assert scans2 == scans

        # `bag pull` by fault code, then a resumed pull
        out = tmp / "pulled"
        cli = [sys.executable, "-m", "gateway", "bag", "pull",
               f"{gw.base}/apps/lidar_sensor/bulk-data/rosbags/{CODE}", "-o", str(out)]
        done = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (out / f"{rec_id}.mcap").read_bytes() == by_id.body
        assert "100.0%" in done.stderr
        half = len(by_id.body) // 2
        (out / f"{CODE}.part").write_bytes(by_id.body[:half])
        (out / f"{CODE}.part.json").write_text(json.dumps(
            {"url": cli[5], "etag": by_id.headers["etag"], "name": f"{rec_id}.mcap"}))
        (out / f"{rec_id}.mcap").unlink()
        done = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert f"resumed at byte {half}" in done.stdout
        assert (out / f"{rec_id}.mcap").read_bytes() == by_id.body

        # restart recovery: killed gateway, a bag left mid-write, a corrupt index
        kill(gw)
        root = state / "rosbags"
        partial = root / "rec_20200101T000000000Z_dead00.partial"
        partial.mkdir()
        (partial / "rec_20200101T000000000Z_dead00_0.mcap").write_bytes(by_id.body[:100])
        (root / "index.json").write_text("{ torn")
        gw = gateway(domain, state).start()
        listed = gw.wait_for("/apps/lidar_sensor/bulk-data/rosbags",
                             lambda b: rec_id in {d["id"] for d in b["items"]}, timeout=20)
        assert not partial.exists()
        assert {d["id"] for d in listed["items"]} == {d.name for d in root.iterdir()
                                                      if d.is_dir()}
        again = gw.get(f"/apps/lidar_sensor/bulk-data/rosbags/{rec_id}")
        assert again.status == 200 and again.body == by_id.body
        assert gw.get("/health").json()["x-vendor-recorder"]["recordings"] == len(
            listed["items"])
    finally:
        gw.stop()


def test_sqlite3_recording_reads_with_two_readers(robot: Robot, domain: int,
                                                 tmp_path_factory: pytest.TempPathFactory
                                                 ) -> None:
    tmp = tmp_path_factory.mktemp("sqlite3")
    with gateway(domain, tmp / "state", "snapshots.rosbag.format=sqlite3") as gw:
        desc = recording_with_history(gw)
        rec_id = desc["id"]
        assert desc["name"] == f"{rec_id}.sqlite3" and desc["x-vendor"]["format"] == "sqlite3"
        resp = gw.get(f"/apps/lidar_sensor/bulk-data/rosbags/{CODE}")
        assert resp.status == 200 and resp.headers["content-type"] == "application/x-sqlite3"
        assert resp.headers["content-disposition"] == f"attachment; filename={rec_id}.sqlite3"
    path = tmp / f"{rec_id}.db3"
    path.write_bytes(resp.body)
    trigger = ns_of(desc["creation_date"])

    # reader 1: rosbags
    store = get_typestore(Stores.EMPTY)
    db = Sqlite3Reader(path)
    db.open()
    try:
        (conn,) = [c for c in db.connections if c.topic == SCAN]
        assert conn.msgtype == SCAN_TYPE and conn.digest.startswith("RIHS01_")
        store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
        scans = [(t, store.deserialize_cdr(raw, conn.msgtype).header.frame_id)
                 for _, t, raw in db.messages([conn])]
    finally:
        db.close()
    check_scans(scans, trigger)

    # reader 2: stdlib sqlite3 and the mcap-ros2-support CDR decoder from the stored schema
    with sqlite3.connect(path) as c:
        (text,) = c.execute("SELECT encoded_message_definition FROM message_definitions "
                            "WHERE topic_type = ?", (SCAN_TYPE,)).fetchone()
        rows = c.execute("SELECT m.timestamp, m.data FROM messages m JOIN topics t ON "
                         "t.id = m.topic_id WHERE t.name = ? ORDER BY m.id", (SCAN,)).fetchall()
    decode = DecoderFactory().decoder_for(
        "cdr", Schema(id=1, name=SCAN_TYPE, encoding="ros2msg", data=text.encode()))
    scans2 = [(t, decode(data).header.frame_id) for t, data in rows]
    assert scans2 == scans


def kill(gw: Gateway) -> None:
    """SIGKILL, as a crash would; then drop the shared-memory files it left."""
    assert gw.proc is not None
    os.killpg(gw.proc.pid, signal.SIGKILL)
    gw.proc.wait(10)
    venv = Path(sys.executable).parents[1]
    tool = venv / "tools" / "fastdds" / "fastdds.py"
    if tool.exists():
        subprocess.run([sys.executable, str(tool), "shm", "clean"], env=ros_env(0),
                       capture_output=True, timeout=60)
