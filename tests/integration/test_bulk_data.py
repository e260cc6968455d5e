"""Bulk-data against a real gateway: recordings, their scope and Range downloads; an upload's
round trip and an interrupted upload."""

from __future__ import annotations

import email.parser
import email.policy
import json
import secrets
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error

pytestmark = pytest.mark.integration

CODE = "LIDAR_RANGE_INVALID"
MAX_UPLOAD = 100_000
LIDAR_BAGS = "/apps/lidar_sensor/bulk-data/rosbags"


ROBOT_NODES = ("lidar_sensor", "temp_sensor")
@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bulk") / "state"


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, state_dir: Path) -> Iterator[Gateway]:
    settings = [f"state_dir={state_dir}", "snapshots.rosbag.enabled=true",
                "snapshots.rosbag.duration_sec=1", "snapshots.rosbag.duration_after_sec=0.5",
                "bulk_data.categories=[calib, firmware]", f"bulk_data.max_upload_size={MAX_UPLOAD}",
                "discovery.refresh_debounce_ms=100", "snapshots.enabled=false"]
    with Gateway(free_port(), domain, settings, state_dir.parent / "gateway.log") as g:
        g.wait_for("/apps", lambda b: {"lidar_sensor", "temp_sensor"} <= {
            i["id"] for i in b["items"]}, timeout=20)
        g.wait_for(LIDAR_BAGS, lambda b: any(CODE in d["x-vendor"]["fault_codes"]
                                             for d in b["items"]), timeout=30)
        yield g


@pytest.fixture(scope="module")
def bag(gw: Gateway) -> tuple[dict[str, Any], bytes]:
    desc = next(d for d in gw.get(LIDAR_BAGS).json()["items"]
                if CODE in d["x-vendor"]["fault_codes"])
    resp = gw.get(f"{LIDAR_BAGS}/{desc['id']}")
    assert resp.status == 200
    return desc, resp.body


@pytest.fixture(scope="module")
def host(gw: Gateway) -> str:
    return gw.get("/components").json()["items"][0]["id"]  # type: ignore[no-any-return]


def multipart(*fields: tuple[str, str | None, str | None, bytes]) -> tuple[bytes, str]:
    """(name, filename, content type, data) fields -> body and Content-Type."""
    boundary = "b-" + secrets.token_hex(12)
    out = []
    for name, filename, ctype, data in fields:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        head = f"--{boundary}\r\nContent-Disposition: {disp}\r\n"
        if ctype:
            head += f"Content-Type: {ctype}\r\n"
        out.append(head.encode() + b"\r\n" + data + b"\r\n")
    return b"".join(out) + f"--{boundary}--\r\n".encode(), \
        f"multipart/form-data; boundary={boundary}"


def upload(gw: Gateway, path: str, *fields: tuple[str, str | None, str | None, bytes]
           ) -> Response:
    body, ctype = multipart(*fields)
    return gw.request("POST", path, raw=body, headers={"Content-Type": ctype})


def leftovers(state_dir: Path) -> list[str]:
    """Temporary upload entries under the bulk-data root (listed again when one goes while
    it is being listed: the gateway removes them as the test looks)."""
    root = state_dir / "bulk_data"
    while True:
        try:
            return sorted(p.name for p in root.rglob("*") if p.name.startswith(".incoming-"))
        except FileNotFoundError:
            continue


# categories, descriptors, scope -----------------------------------------------------------------
def test_descriptor_per_recording(gw: Gateway, bag: tuple[dict[str, Any], bytes]) -> None:
    desc, data = bag
    assert desc["size"] == len(data) and desc["mimetype"] == "application/x-mcap"
    assert desc["name"] == f"{desc['id']}.mcap"
    assert desc["x-vendor"]["recording_id"] == desc["id"]
    assert desc["x-vendor"]["format"] == "mcap" and desc["x-vendor"]["duration_sec"] == 1.5
    assert desc["creation_date"].endswith("Z")
    ids = [d["id"] for d in gw.get(LIDAR_BAGS).json()["items"]]
    assert len(ids) == len(set(ids))


def test_rosbags_are_visible_only_where_a_covered_fault_is_in_scope(
        gw: Gateway, bag: tuple[dict[str, Any], bytes], host: str) -> None:
    desc, data = bag
    rid = desc["id"]
    for path in (f"/components/{host}", "/functions/perception"):
        assert rid in {d["id"] for d in gw.get(f"{path}/bulk-data/rosbags").json()["items"]}
        assert gw.get(f"{path}/bulk-data/rosbags/{rid}").body == data
    for path in ("/apps/temp_sensor", "/functions/powertrain"):
        assert gw.get(f"{path}/bulk-data/rosbags").json()["items"] == []
        assert_error(gw.get(f"{path}/bulk-data/rosbags/{rid}"), 404, "resource-not-found")
        assert_error(gw.get(f"{path}/bulk-data/rosbags/{CODE}"), 404)
    assert_error(gw.get(f"{LIDAR_BAGS}/NO_SUCH_FAULT"), 404)


def test_download_headers(gw: Gateway, bag: tuple[dict[str, Any], bytes]) -> None:
    desc, data = bag
    resp = gw.get(f"{LIDAR_BAGS}/{CODE}")  # a fault code serves the fault's newest recording
    assert resp.status == 200
    newest = gw.get(LIDAR_BAGS).json()["items"]
    assert resp.headers["content-disposition"] == f"attachment; filename={newest[0]['id']}.mcap"
    assert resp.headers["content-type"] == "application/x-mcap"
    assert resp.headers["accept-ranges"] == "bytes"
    assert "Content-Disposition" in resp.headers["access-control-expose-headers"]
    assert int(resp.headers["content-length"]) == len(resp.body)


# Range ------------------------------------------------------------------------------------------
def test_single_ranges(gw: Gateway, bag: tuple[dict[str, Any], bytes]) -> None:
    desc, data = bag
    url, size = f"{LIDAR_BAGS}/{desc['id']}", len(data)
    for spec, (start, end) in (("bytes=0-99", (0, 99)), ("bytes=100-", (100, size - 1)),
                               ("bytes=-50", (size - 50, size - 1)),
                               (f"bytes=10-{size + 1000}", (10, size - 1))):
        resp = gw.get(url, headers={"Range": spec})
        assert resp.status == 206, (spec, resp)
        assert resp.headers["content-range"] == f"bytes {start}-{end}/{size}"
        assert resp.headers["content-type"] == "application/x-mcap"
        assert resp.body == data[start:end + 1]


def test_several_ranges_are_one_multipart_body(gw: Gateway,
                                               bag: tuple[dict[str, Any], bytes]) -> None:
    desc, data = bag
    size = len(data)
    resp = gw.get(f"{LIDAR_BAGS}/{desc['id']}", headers={"Range": "bytes=0-9, 20-29, -5"})
    assert resp.status == 206
    ctype = resp.headers["content-type"]
    assert ctype.startswith("multipart/byteranges; boundary=")
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + resp.body)
    parts = list(msg.iter_parts())
    assert [p["Content-Range"] for p in parts] == [
        f"bytes 0-9/{size}", f"bytes 20-29/{size}", f"bytes {size - 5}-{size - 1}/{size}"]
    assert [p.get_payload(decode=True) for p in parts] == [data[0:10], data[20:30], data[-5:]]
    assert all(p["Content-Type"] == "application/x-mcap" for p in parts)
    assert int(resp.headers["content-length"]) == len(resp.body)


def test_range_416(gw: Gateway, bag: tuple[dict[str, Any], bytes]) -> None:
    desc, data = bag
    url = f"{LIDAR_BAGS}/{desc['id']}"
    for bad in ("bytes=abc", "items=0-1", "bytes=9-3"):
        assert_error(gw.get(url, headers={"Range": bad}), 416)
    resp = gw.get(url, headers={"Range": f"bytes={len(data)}-"})
    assert_error(resp, 416)
    assert resp.headers["content-range"] == f"bytes */{len(data)}"


def test_if_range_with_another_etag_sends_everything(gw: Gateway,
                                                    bag: tuple[dict[str, Any], bytes]) -> None:
    desc, data = bag
    url = f"{LIDAR_BAGS}/{desc['id']}"
    etag = gw.get(url, headers={"Range": "bytes=0-0"}).headers["etag"]
    assert gw.get(url, headers={"Range": "bytes=5-", "If-Range": etag}).status == 206
    full = gw.get(url, headers={"Range": "bytes=5-", "If-Range": '"other"'})
    assert full.status == 200 and full.body == data


# uploads ----------------------------------------------------------------------------------------
def test_upload_list_download_delete(gw: Gateway, host: str) -> None:
    content = b"calibration table\n" * 100
    resp = upload(gw, "/apps/temp_sensor/bulk-data/calib",
                  ("file", "calib table.csv", "text/csv", content),
                  ("description", None, None, b"engine calibration"),
                  ("metadata", None, "application/json",
                   json.dumps({"vin": "X1", "rev": 3}).encode()))
    assert resp.status == 201, resp
    desc = resp.json()
    uid = desc["id"]
    assert resp.headers["location"] == f"/api/v1/apps/temp_sensor/bulk-data/calib/{uid}"
    assert desc["name"] == "calib table.csv" and desc["mimetype"] == "text/csv"
    assert desc["size"] == len(content) and desc["description"] == "engine calibration"
    assert desc["x-vendor"] == {"vin": "X1", "rev": 3}
    for path in ("/apps/temp_sensor", f"/components/{host}", "/functions/powertrain"):
        assert uid in {d["id"] for d in gw.get(f"{path}/bulk-data/calib").json()["items"]}
    for path in ("/apps/lidar_sensor", "/functions/perception"):
        assert uid not in {d["id"] for d in gw.get(f"{path}/bulk-data/calib").json()["items"]}
        assert_error(gw.get(f"{path}/bulk-data/calib/{uid}"), 404)
    got = gw.get(f"/apps/temp_sensor/bulk-data/calib/{uid}")
    assert got.status == 200 and got.body == content
    assert got.headers["content-type"] == "text/csv"
    assert got.headers["content-disposition"] == 'attachment; filename="calib table.csv"'
    part = gw.get(f"/apps/temp_sensor/bulk-data/calib/{uid}", headers={"Range": "bytes=0-8"})
    assert part.status == 206 and part.body == b"calibrati"
    assert gw.get("/apps/temp_sensor/bulk-data/firmware").json()["items"] == []

    assert gw.request("DELETE", f"/apps/temp_sensor/bulk-data/calib/{uid}").status == 204
    assert_error(gw.get(f"/apps/temp_sensor/bulk-data/calib/{uid}"), 404)
    assert_error(gw.request("DELETE", f"/apps/temp_sensor/bulk-data/calib/{uid}"), 404)


def test_rosbags_cannot_be_deleted(gw: Gateway, bag: tuple[dict[str, Any], bytes]) -> None:
    desc, _ = bag
    assert_error(gw.request("DELETE", f"{LIDAR_BAGS}/{desc['id']}"), 400, "invalid-request")
    assert gw.get(f"{LIDAR_BAGS}/{desc['id']}").status == 200
    assert_error(gw.request("DELETE", "/apps/lidar_sensor/bulk-data/unknown/x"), 404)


def test_an_interrupted_upload_leaves_nothing(gw: Gateway, state_dir: Path) -> None:
    body, ctype = multipart(("file", "cut.bin", None, b"c" * 80_000))
    head = (f"POST /api/v1/apps/temp_sensor/bulk-data/calib HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", gw.port)) as sock:
        sock.sendall(head.encode() + body[:40_000])
        # the gateway is streaming the file part into a temporary file
        deadline = time.monotonic() + 30
        while not leftovers(state_dir) and time.monotonic() < deadline:
            time.sleep(0.02)
    deadline = time.monotonic() + 10
    while leftovers(state_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(state_dir) == []
    assert gw.get("/apps/temp_sensor/bulk-data/calib").json()["items"] == []
