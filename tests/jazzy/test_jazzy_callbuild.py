"""Service calls of types the gateway lacks, with no configuration: the type is built at run
time from the description a Jazzy server serves (gateway/ros/calls/callbuild.py, typebuild.py).

A real Jazzy process serves nav_msgs/srv/GetMap and nav_msgs/srv/SetMap with service
introspection on (their `_service_event` topics carry the types' hashes) and
nav_msgs/srv/LoadMap with it off, and publishes nav_msgs/msg/Odometry; the gateway's venv
has no nav_msgs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error, enc
from tests.jazzy.conftest import JAZZY_PYTHON

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not JAZZY_PYTHON.exists(), reason="no Jazzy prefix at .jazzy (make jazzy)"),
]

BUILD_BUDGET_S = 240.0


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("state")


@pytest.fixture(scope="module")
def gw(maps: Path, domain: int, state_dir: Path) -> Iterator[Gateway]:
    with Gateway(free_port(), domain, [f"state_dir={state_dir}"],
                 log_path=state_dir.parent / "gateway1.log") as gateway:
        yield gateway


def op_path(gateway: Gateway, service: str) -> str:
    """The executions path of a service of jazzy_maps, once the gateway lists it."""
    body = gateway.wait_for("/apps/jazzy_maps/operations",
                            lambda b: any(service in i["id"] for i in b["items"]), timeout=60)
    op_id = next(i["id"] for i in body["items"] if service in i["id"])
    return f"/apps/jazzy_maps/operations/{enc(op_id)}/executions"


def call(gateway: Gateway, service: str, body: dict[str, object]) -> tuple[Response, list[int]]:
    """POST a call, repeated while it answers 503 (the type is being built); the answer and
    every status seen."""
    path = op_path(gateway, service)
    seen = []
    deadline = time.monotonic() + BUILD_BUDGET_S
    while True:
        resp = gateway.request("POST", path, body)
        seen.append(resp.status)
        if resp.status != 503 or time.monotonic() > deadline:
            return resp, seen
        err = assert_error(resp, 503, "vendor-error")
        assert err["vendor_code"] == "x-vendor-ros2-type-build-pending", err
        time.sleep(0.5)


def test_a_call_builds_the_type_from_the_description(gw: Gateway, state_dir: Path) -> None:
    # a call whose budget ends before the build answers 503; the build goes on
    early = gw.request("POST", op_path(gw, "get_map"), {"timeout": 0.05})
    body = assert_error(early, 503, "vendor-error")
    assert body["vendor_code"] == "x-vendor-ros2-type-build-pending"
    assert "nav_msgs/srv/GetMap" in body["message"]
    resp, seen = call(gw, "get_map", {})
    assert resp.status == 200, (resp, seen)
    grid = resp.json()["parameters"]["map"]
    assert grid["header"]["frame_id"] == "map"
    assert grid["info"]["width"] == 3 and grid["data"] == [0, 100, -1]
    assert set(seen) <= {200, 503}, seen
    builds = [p for p in (state_dir / "types").iterdir() if (p / "BUILT").is_file()]
    assert len(builds) == 1, builds
    served = gw.get("/health").json()["x-vendor-ros-types"]["interface_paths"]
    assert "nav_msgs" in served["packages"] and str(builds[0]) in served["prefixes"], served


def test_the_package_build_serves_every_introspected_service(gw: Gateway, maps: Path) -> None:
    body = {"map": {"info": {"width": 4}}, "initial_pose": {"pose": {"pose": {
        "position": {"x": 1.5}}}}}
    resp, seen = call(gw, "set_map", body)
    assert resp.status == 200, (resp, seen)
    assert resp.json()["parameters"] == {"success": True}
    deadline = time.monotonic() + 20
    while b"SET 4 1.5" not in maps.read_bytes():
        assert time.monotonic() < deadline, maps.read_text()
        time.sleep(0.1)


def test_the_build_brings_the_packages_topic_types(gw: Gateway) -> None:
    call(gw, "get_map", {})  # built (whatever ran before)
    items = {i["id"]: i for i in gw.get("/apps/jazzy_maps/data").json()["items"]}
    vendor = items["/maps_odom"]["x-vendor"]
    assert vendor["ros2"]["type"] == "nav_msgs/msg/Odometry"
    assert "type_available" not in vendor and "type_info" in vendor, vendor
    body = gw.wait_for(f"/apps/jazzy_maps/data/{enc('/maps_odom')}",
                       lambda b: b["x-vendor"]["status"] == "data", timeout=30)
    assert "type_source" not in body["x-vendor"]  # read by a typed subscription
    assert body["data"]["pose"]["pose"]["position"]["x"] == 2.5


def test_an_invalid_request_field_is_a_400_naming_it(gw: Gateway) -> None:
    resp, _ = call(gw, "set_map", {"map": {"info": {"width": "wide"}}})
    body = assert_error(resp, 400)
    assert "map.info.width" in str(body), body


def test_a_server_without_introspection_answers_501_with_the_reason(gw: Gateway) -> None:
    resp, _ = call(gw, "load_map", {"map_url": "x"})
    body = assert_error(resp, 501, "vendor-error")
    assert body["vendor_code"] == "x-vendor-ros2-service-unavailable"
    assert "nav_msgs/srv/LoadMap" in body["message"]
    assert "_service_event" in body["message"] and "ros.interface_paths" in body["message"]
    assert body["parameters"]["setting"] == "ros.interface_paths"


def test_a_restart_reuses_the_build(gw: Gateway, maps: Path, domain: int,
                                    state_dir: Path) -> None:
    call(gw, "get_map", {})  # built by the first gateway (whatever ran before)
    gw.stop()
    log = state_dir.parent / "gateway2.log"
    with Gateway(free_port(), domain, [f"state_dir={state_dir}"], log_path=log) as again:
        resp, seen = call(again, "get_map", {})
        assert resp.status == 200, (resp, seen)
        assert resp.json()["parameters"]["map"]["data"] == [0, 100, -1]
    text = log.read_text(errors="replace")
    assert "served from the build in" in text and "built in" not in text, text[-3000:]


def test_a_build_that_cannot_run_answers_501_naming_the_reason(
        maps: Path, domain: int, tmp_path: Path) -> None:
    (tmp_path / "types").write_text("not a directory")  # the cache cannot be made
    with Gateway(free_port(), domain, [f"state_dir={tmp_path}"],
                 log_path=tmp_path / "gateway.log") as gateway:
        resp, _ = call(gateway, "get_map", {})
    body = assert_error(resp, 501, "vendor-error")
    assert body["vendor_code"] == "x-vendor-ros2-service-unavailable"
    assert "not built from the server's description" in body["message"], body
    assert "types" in body["message"], body


def test_concurrent_calls_of_one_package_share_one_build(maps: Path, domain: int,
                                                         tmp_path: Path) -> None:
    answers: dict[str, tuple[Response, list[int]]] = {}
    with Gateway(free_port(), domain, [f"state_dir={tmp_path}"],
                 log_path=tmp_path / "gateway.log") as gateway:
        op_path(gateway, "set_map")
        workers = [threading.Thread(target=lambda s=s, b=b: answers.__setitem__(
            s, call(gateway, s, b))) for s, b in (("get_map", {}), ("set_map", {}))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(BUILD_BUDGET_S + 30)
    assert answers["get_map"][0].status == 200, answers["get_map"]
    assert answers["set_map"][0].status == 200, answers["set_map"]
    assert answers["set_map"][0].json()["parameters"] == {"success": False}  # width 0
    assert [p.name for p in (tmp_path / "types").iterdir()] == \
        [p.name for p in (tmp_path / "types").iterdir() if (p / "BUILT").is_file()]
    assert len(list((tmp_path / "types").iterdir())) == 1
