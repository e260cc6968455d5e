"""Types the gateway lacks, served by Jazzy nodes: `ros.interface_paths` and the 501 without it.

The gateway's venv has no nav_msgs; the Jazzy prefix (.jazzy, PyPI wheels laid out like
/opt/ros/jazzy) has. Real Jazzy processes publish nav_msgs/msg/Odometry, count what they
receive on a command topic and serve nav_msgs/srv/GetMap.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import Gateway, assert_error, enc
from tests.jazzy.conftest import JAZZY, JAZZY_PYTHON, jazzy_env

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not JAZZY_PYTHON.exists(), reason="no Jazzy prefix at .jazzy (make jazzy)"),
]

NODE = r"""
import sys, rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from nav_msgs.msg import Odometry, Path
from nav_msgs.srv import GetMap
rclpy.init()
node = rclpy.create_node("jazzy_nav")
# a node that serves no type descriptions, publishing a type no other node describes
quiet = rclpy.create_node("jazzy_quiet", parameter_overrides=[
    Parameter("start_type_description_service", value=False)])
path_pub = quiet.create_publisher(Path, "/plan", 10)
quiet.create_timer(0.5, lambda: path_pub.publish(Path()))
pub = node.create_publisher(Odometry, "/odom", 10)

def tick():
    msg = Odometry()
    msg.header.frame_id = "odom"
    msg.child_frame_id = "base_link"
    msg.pose.pose.position.x = 1.25
    msg.twist.twist.angular.z = -0.5
    pub.publish(msg)

def on_cmd(msg):
    print("CMD", msg.child_frame_id, msg.pose.pose.position.x, flush=True)

def get_map(request, response):
    response.map.header.frame_id = "map"
    response.map.info.width = 3
    response.map.info.height = 1
    response.map.info.resolution = 0.05
    response.map.data = [0, 100, -1]
    return response

node.create_timer(0.2, tick)
node.create_subscription(Odometry, "/odom_cmd", on_cmd, 10)
node.create_service(GetMap, "/get_map", get_map)
executor = SingleThreadedExecutor()
executor.add_node(node)
executor.add_node(quiet)
print("READY", flush=True)
executor.spin()
"""


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll predicate until it is true."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class JazzyNode:
    """One Jazzy process running NODE; its stdout lines are collected."""

    def __init__(self, domain: int) -> None:
        self.proc = subprocess.Popen([str(JAZZY_PYTHON), "-c", NODE], env=jazzy_env(domain),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        wait_until(lambda: "READY" in self.lines or self.proc.poll() is not None, 60,
                   "the Jazzy node to start")
        assert self.proc.poll() is None, "\n".join(self.lines)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def commands(self) -> list[str]:
        """CMD lines received so far."""
        return [line for line in self.lines if line.startswith("CMD ")]

    def stop(self) -> None:
        """Terminate the process."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._reader.join(5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def jazzy(domain: int) -> Iterator[JazzyNode]:
    node = JazzyNode(domain)
    yield node
    node.stop()


def _gateway(domain: int, tmp: Path, *settings: str) -> Gateway:
    return Gateway(free_port(), domain, settings, log_path=tmp / "gateway.log")


@pytest.fixture(scope="module")
def gw_paths(jazzy: JazzyNode, domain: int, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw_paths")
    with _gateway(domain, tmp, f"ros.interface_paths=[{JAZZY}]") as gw:
        yield gw


@pytest.fixture(scope="module")
def gw_plain(jazzy: JazzyNode, domain: int, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw_plain")
    with _gateway(domain, tmp) as gw:
        yield gw


def _app_ready(gw: Gateway) -> None:
    gw.wait_for("/apps/jazzy_nav/data",
                lambda b: any(i["id"] == "/odom_cmd" for i in b["items"]), timeout=60)
    gw.wait_for("/apps/jazzy_nav/operations",
                lambda b: any("get_map" in i["id"] for i in b["items"]), timeout=60)


def test_the_gateway_venv_lacks_nav_msgs() -> None:
    assert subprocess.run([sys.executable, "-c", "import nav_msgs"],
                          capture_output=True).returncode != 0


def test_read_through_interface_paths(gw_paths: Gateway) -> None:
    _app_ready(gw_paths)
    items = {i["id"]: i for i in gw_paths.get("/apps/jazzy_nav/data").json()["items"]}
    vendor = items["/odom"]["x-vendor"]
    assert vendor["ros2"]["type"] == "nav_msgs/msg/Odometry"
    assert "type_available" not in vendor and "type_info" in vendor
    body = gw_paths.wait_for(f"/apps/jazzy_nav/data/{enc('/odom')}",
                             lambda b: b["x-vendor"]["status"] == "data", timeout=30)
    assert body["data"]["pose"]["pose"]["position"]["x"] == 1.25
    assert body["data"]["twist"]["twist"]["angular"]["z"] == -0.5
    assert body["data"]["child_frame_id"] == "base_link"


def test_write_through_interface_paths(gw_paths: Gateway, jazzy: JazzyNode) -> None:
    _app_ready(gw_paths)
    resp = gw_paths.request("PUT", f"/apps/jazzy_nav/data/{enc('/odom_cmd')}",
                            {"child_frame_id": "gw", "pose": {"pose": {"position": {"x": 7.5}}}})
    assert resp.status == 200, resp
    assert resp.json()["x-vendor"]["subscribers_matched"] == 1
    # the first write is received (the publisher waited for the Jazzy subscriber's match)
    wait_until(lambda: "CMD gw 7.5" in jazzy.commands(), 20, "the Jazzy node's CMD line")


def test_call_through_interface_paths(gw_paths: Gateway) -> None:
    _app_ready(gw_paths)
    ops = gw_paths.get("/apps/jazzy_nav/operations").json()["items"]
    op_id = next(i["id"] for i in ops if "get_map" in i["id"])
    resp = gw_paths.request("POST", f"/apps/jazzy_nav/operations/{enc(op_id)}/executions", {})
    assert resp.status == 200, resp
    grid = resp.json()["parameters"]["map"]
    assert grid["info"]["width"] == 3 and grid["data"] == [0, 100, -1]
    assert grid["header"]["frame_id"] == "map"


def test_read_without_configuration_from_the_type_description(gw_plain: Gateway) -> None:
    _app_ready(gw_plain)
    body = gw_plain.wait_for(f"/apps/jazzy_nav/data/{enc('/odom')}",
                             lambda b: b["x-vendor"]["status"] == "data", timeout=30)
    assert body["x-vendor"]["type_source"] == "type_description"
    assert body["x-vendor"]["ros2"]["type"] == "nav_msgs/msg/Odometry"
    assert body["data"]["pose"]["pose"]["position"]["x"] == 1.25
    assert body["data"]["twist"]["twist"]["angular"]["z"] == -0.5
    assert body["data"]["child_frame_id"] == "base_link"


def test_a_type_nobody_describes_answers_503_then_501(gw_plain: Gateway) -> None:
    gw_plain.wait_for("/apps/jazzy_quiet/data",
                      lambda b: any(i["id"] == "/plan" for i in b["items"]), timeout=60)
    path = f"/apps/jazzy_quiet/data/{enc('/plan')}"
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        resp = gw_plain.get(path)
        seen.append(resp.status)
        if resp.status != 503:
            break
        body = assert_error(resp, 503, "vendor-error")
        assert "nav_msgs/msg/Path" in body["message"]
        time.sleep(0.2)
    body = assert_error(resp, 501, "vendor-error")
    assert body["vendor_code"] == "x-vendor-ros2-topic-type-unavailable"
    assert "nav_msgs/msg/Path" in body["message"] and "ros.interface_paths" in body["message"]
    assert body["parameters"]["setting"] == "ros.interface_paths"
    assert set(seen) <= {501, 503}, seen


def test_write_without_configuration_from_the_type_description(gw_plain: Gateway,
                                                                jazzy: JazzyNode) -> None:
    _app_ready(gw_plain)
    path = f"/apps/jazzy_nav/data/{enc('/odom_cmd')}"
    body = {"type": "nav_msgs/msg/Odometry",
            "data": {"child_frame_id": "desc", "pose": {"pose": {"position": {"x": 3.5}}}}}
    resp = gw_plain.request("PUT", path, body)
    deadline = time.monotonic() + 30
    while resp.status == 503 and time.monotonic() < deadline:  # description being fetched
        time.sleep(0.2)
        resp = gw_plain.request("PUT", path, body)
    assert resp.status == 200, resp
    vendor = resp.json()["x-vendor"]
    assert vendor["type_source"] == "type_description" and vendor["subscribers_matched"] == 1
    wait_until(lambda: "CMD desc 3.5" in jazzy.commands(), 20, "the Jazzy node's CMD line")
    bad = gw_plain.request("PUT", path, {"pose": {"pose": {"position": {"x": "far"}}}})
    err = assert_error(bad, 400, "invalid-request")
    assert err["parameters"]["fields"][0]["field"] == "pose.pose.position.x"


def test_unknown_type_answers_501_naming_the_setting(gw_plain: Gateway) -> None:
    _app_ready(gw_plain)
    items = {i["id"]: i for i in gw_plain.get("/apps/jazzy_nav/data").json()["items"]}
    vendor = items["/odom"]["x-vendor"]
    assert vendor["type_available"] is False and vendor["type_setting"] == "ros.interface_paths"
    ops = gw_plain.get("/apps/jazzy_nav/operations").json()["items"]
    op_id = next(i["id"] for i in ops if "get_map" in i["id"])
    body = assert_error(gw_plain.request(
        "POST", f"/apps/jazzy_nav/operations/{enc(op_id)}/executions", {}), 501, "vendor-error")
    assert "nav_msgs/srv/GetMap" in body["message"]
    assert body["parameters"]["setting"] == "ros.interface_paths"


def test_a_missing_prefix_is_a_config_error_naming_the_setting(domain: int,
                                                                tmp_path: Path) -> None:
    env = ros_env(domain)
    proc = subprocess.run(
        [sys.executable, "-m", "gateway", "run", "--port", str(free_port()), "--domain",
         str(domain), "--set", f"ros.interface_paths=[{tmp_path / 'nowhere'}]"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "ros.interface_paths" in proc.stderr + proc.stdout

