"""Capture a real robot gateway's answers to what a primary asks of a peer (fleet_sim templates).

Starts the demo robot's lidar_sensor and a robot gateway on it (rosbags on, so a recording
exists), sends every request a primary makes to a peer (health probe, entity declaration,
beacon, fan-out list reads of each declared entity, /version-info, /faults, the fault stream,
bulk-data lists, a fault clear) and writes status, headers and body of each to
bench/_sim_templates.json, which bench/fleet_sim.py serves per simulated robot.

Usage: python bench/_sim_capture.py [--domain 226] [--out bench/_sim_templates.json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.demo.robot import Robot  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway, wait_until  # noqa: E402

NO_FAN_OUT = {"X-Vendor-No-Fan-Out": "1"}
COLLECTIONS = ("data", "operations", "configurations", "faults", "logs")
KEEP_HEADERS = ("content-type", "etag", "x-vendor-last-event-id", "cache-control")
FAULT = "LIDAR_RANGE_INVALID"


def get(port: int, path: str, headers: dict[str, str] | None = None,
        method: str = "GET") -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, "/api/v1" + path, headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    kept = {k.lower(): v for k, v in resp.getheaders() if k.lower() in KEEP_HEADERS}
    try:
        parsed: Any = json.loads(body) if body else None
    except ValueError:
        parsed = body.decode("latin-1")
    return {"status": resp.status, "headers": kept, "body": parsed}


def stream_frames(port: int, seconds: float, action: Any) -> dict[str, Any]:
    """The fault stream's head and the frames it sends while `action` runs."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/api/v1/faults/stream", headers=NO_FAN_OUT)
    resp = conn.getresponse()
    frames: list[str] = []

    def read() -> None:
        block: list[str] = []
        try:
            for raw in resp.fp:
                line = raw.decode().rstrip("\n")
                if line:
                    block.append(line)
                elif block:
                    frames.append("\n".join(block))
                    block = []
        except (OSError, ValueError):
            pass
    threading.Thread(target=read, daemon=True).start()
    time.sleep(0.5)
    action()
    time.sleep(seconds)
    head = {k.lower(): v for k, v in resp.getheaders()}
    conn.close()
    return {"status": resp.status, "headers": head, "frames": frames}


def beacon_lines(port: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/api/v1/x-vendor-beacon?interval_ms=500")
    resp = conn.getresponse()
    lines = [resp.fp.readline().decode() for _ in range(6)]
    head = {k.lower(): v for k, v in resp.getheaders()}
    conn.close()
    return {"status": resp.status, "headers": head, "lines": lines}


def capture(domain: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="sim-capture-"))
    port = free_port()
    out: dict[str, Any] = {"captured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "answers": {}}
    gw = Gateway(port, domain, [
        "aggregation.announce=false", "aggregation.mdns_name=robot",
        "snapshots.rosbag.enabled=true", "snapshots.rosbag.topic_selection=all",
        "snapshots.rosbag.duration_sec=2", "snapshots.rosbag.max_bag_size_mb=1",
        f"state_dir={tmp / 'state'}"], tmp / "gateway.log")
    with Robot.start(domain, nodes=("lidar_sensor",), log_dir=tmp / "nodes"), gw:
        answers = out["answers"]
        wait_until(lambda: get(port, "/apps/lidar_sensor/faults", NO_FAN_OUT)["body"].get(
            "items"), 60, "the lidar's faults")
        wait_until(lambda: get(port, "/apps/lidar_sensor/bulk-data/rosbags", NO_FAN_OUT)[
            "body"].get("items"), 60, "a recording", interval=0.5)
        answers["/health"] = get(port, "/health")
        ent = answers["/x-vendor-entities"] = get(port, "/x-vendor-entities")
        answers["/x-vendor-entities 304"] = get(
            port, "/x-vendor-entities", {"If-None-Match": ent["headers"]["etag"]})
        answers["/version-info"] = get(port, "/version-info", NO_FAN_OUT)
        answers["/faults"] = get(port, "/faults", NO_FAN_OUT)
        for kind in ("areas", "components", "functions", "apps"):
            for entity in ent["body"].get(kind, []):
                for coll in COLLECTIONS:
                    path = f"/{kind}/{entity['id']}/{coll}"
                    answers[path] = get(port, path, NO_FAN_OUT)
        answers["/apps/lidar_sensor/bulk-data"] = get(port, "/apps/lidar_sensor/bulk-data")
        answers["/apps/lidar_sensor/bulk-data/rosbags"] = get(
            port, "/apps/lidar_sensor/bulk-data/rosbags")
        out["beacon"] = beacon_lines(port)
        out["stream"] = stream_frames(port, 5.0, lambda: get(
            port, f"/apps/lidar_sensor/faults/{FAULT}", method="DELETE"))
        answers[f"DELETE /apps/lidar_sensor/faults/{FAULT}"] = get(
            port, f"/apps/lidar_sensor/faults/{FAULT}", method="DELETE")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", type=int, default=226)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "_sim_templates.json")
    args = ap.parse_args()
    data = capture(args.domain)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{len(data['answers'])} answers, {len(data['stream']['frames'])} stream frames "
          f"written to {args.out}")


if __name__ == "__main__":
    main()
