"""A Jazzy robot beside the Kilted gateway: Jazzy node processes from the `.jazzy` prefix.

`make install` puts ROS 2 Jazzy's wheels (rclpy 7.1, Fast DDS 2.14) into `.jazzy`, a venv laid
out like `/opt/ros/jazzy`. Jazzy processes run with `.jazzy/bin/python` and an environment
without the gateway's loader variables (the Jazzy wheels' bootstrap sets its own).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.domains import next_domain
from tests.harness import ROOT, Gateway

JAZZY = ROOT / ".jazzy"
JAZZY_PYTHON = JAZZY / "bin" / "python"
JAZZY_SITE = JAZZY / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
    "site-packages"
HERE = Path(__file__).resolve().parent
ROBOT_SCRIPT = HERE / "jazzy_robot.py"
READY_TIMEOUT_S = 60.0
# The gateway's own loader environment: a Jazzy process must not inherit it.
_LOADER_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "AMENT_PREFIX_PATH", "ROS_DISTRO",
                "_ROS_WHEELS_BOOTSTRAP_COMPLETE", "DIAG_GATEWAY_USER_ENV")


def require_jazzy() -> None:
    """Skip (saying how to fix it) when the Jazzy prefix is not installed."""
    if not JAZZY_PYTHON.exists():
        pytest.skip(f"no Jazzy prefix at {JAZZY}: `make install` installs it")


def jazzy_env(domain: int, pythonpath: Sequence[str | Path] = ()) -> dict[str, str]:
    """The environment of a Jazzy process in `domain` (loopback only, short DDS lease)."""
    env = {k: v for k, v in os.environ.items() if k not in _LOADER_VARS}
    env.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               RMW_IMPLEMENTATION="rmw_fastrtps_cpp", PYTHONUNBUFFERED="1",
               FASTDDS_DEFAULT_PROFILES_FILE=str(ROOT / "deploy" / "fastdds_short_lease.xml"))
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    return env


def sourced_jazzy_shell() -> dict[str, str]:
    """The variables `source .jazzy/setup.bash` would give a shell (as /opt/ros/jazzy's does),
    and the bootstrap guard a parent Jazzy Python process hands down."""
    libs = [str(JAZZY / "lib"), *sorted(str(p) for p in JAZZY_SITE.glob("ros_*.libs"))]
    return {"ROS_DISTRO": "jazzy", "ROS_VERSION": "2", "ROS_PYTHON_VERSION": "3",
            "AMENT_PREFIX_PATH": str(JAZZY), "LD_LIBRARY_PATH": os.pathsep.join(libs),
            "PYTHONPATH": str(JAZZY_SITE), "_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1"}


class JazzyProcess:
    """A Jazzy Python process (a node script) that prints READY when its nodes exist."""

    def __init__(self, argv: Sequence[str | Path], env: Mapping[str, str], log_path: Path) -> None:
        self.argv = [str(JAZZY_PYTHON), *map(str, argv)]
        self.env = dict(env)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = READY_TIMEOUT_S) -> JazzyProcess:
        """Start and wait for READY in its output."""
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b"READY" in self.log_path.read_bytes():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"Jazzy process exited with {self.proc.returncode}: "
                                   f"{self.log().strip()[-2000:]}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"Jazzy process not ready in {timeout} s: {self.log()[-2000:]}")

    def log(self) -> str:
        """Its output so far."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int | None:
        """SIGINT, then SIGKILL if it lingers; its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return self.proc.returncode

    def __enter__(self) -> JazzyProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def jazzy_pip(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The Jazzy prefix's pip, offline (`--no-index`): what it installs must need nothing."""
    return subprocess.run(
        [str(JAZZY_PYTHON), "-m", "pip", "--disable-pip-version-check", *map(str, args)],
        env=jazzy_env(0), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def reporter_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of robot_reporter/ (an in-tree build would leave build/ and egg-info there)."""
    require_jazzy()
    copy = tmp_path_factory.mktemp("reporter-src") / "robot_reporter"
    shutil.copytree(ROOT / "robot_reporter", copy)
    return copy


@pytest.fixture(scope="session")
def reporter_site(reporter_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """robot_reporter installed by the Jazzy prefix's pip, as on a robot, into a directory of
    its own on the Jazzy processes' PYTHONPATH."""
    target = tmp_path_factory.mktemp("reporter-site")
    done = jazzy_pip("install", "-q", "--no-index", "--no-build-isolation", "--target", target,
                     reporter_source)
    assert done.returncode == 0, done.stderr
    return target


@pytest.fixture(scope="session")
def jazzy_domain() -> int:
    """The ROS domain of the suite's one Jazzy robot (its own, for every module here)."""
    return next_domain()


@pytest.fixture(scope="session")
def jazzy_robot(jazzy_domain: int, reporter_site: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[JazzyProcess]:
    """The Jazzy robot (tests/jazzy/jazzy_robot.py, with a FaultReporter) in `jazzy_domain`."""
    log = tmp_path_factory.mktemp("jazzy") / "robot.log"
    proc = JazzyProcess([ROBOT_SCRIPT, "--reporter"], jazzy_env(jazzy_domain, [reporter_site]),
                        log)
    with proc:
        yield proc


# A script (run by the gateway) that starts a node on the robot's own ROS, the Jazzy prefix.
JAZZY_SCRIPT = (
    f"exec {JAZZY_PYTHON} -c '"
    "import rclpy; rclpy.init(); n = rclpy.create_node(\"jz_script\"); "
    "from importlib.metadata import version; "
    "print(\"rclpy\", version(\"ros-rclpy\"), rclpy.__file__); "
    "n.destroy_node(); rclpy.shutdown()'\n")


def script_settings(tmp: Path) -> list[str]:
    """Gateway settings with a scripts directory holding `jazzy_node.sh` (JAZZY_SCRIPT)."""
    scripts = tmp / "scripts"
    scripts.mkdir(exist_ok=True)
    (scripts / "jazzy_node.sh").write_text(JAZZY_SCRIPT)
    return [f"state_dir={tmp}", f"scripts.scripts_dir={scripts}", "scripts.allow_anonymous=true",
            "scripts.allow_root=true"]


def run_script(gw: Gateway, app: str = "jz_sensor") -> str:
    """Run `jazzy_node.sh` on an app and wait for it: its stdout (asserts it completed)."""
    resp = gw.request("POST", f"/apps/{app}/scripts/jazzy_node/executions",
                      {"execution_type": "now"})
    assert resp.status == 202, resp
    path = resp.headers["location"][len("/api/v1"):]
    done = gw.wait_for(path, lambda b: b["status"] not in ("prepared", "running"), timeout=60)
    out = str(done["parameters"].get("stdout", "")) + str(done["parameters"].get("stderr", ""))
    assert done["status"] == "completed" and done["parameters"]["exit_code"] == 0, out
    return out


# A Jazzy server of nav_msgs services (introspection on for GetMap and SetMap, off for LoadMap)
# publishing Odometry: the tests of service types the gateway builds at run time.
MAPS_NODE = r"""
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_services_default
from rclpy.service_introspection import ServiceIntrospectionState
from nav_msgs.msg import Odometry
from nav_msgs.srv import GetMap, LoadMap, SetMap
rclpy.init()
node = rclpy.create_node("jazzy_maps")
odom = node.create_publisher(Odometry, "/maps_odom", 10)

def tick():
    msg = Odometry()
    msg.child_frame_id = "base"
    msg.pose.pose.position.x = 2.5
    odom.publish(msg)

node.create_timer(0.2, tick)

def get_map(request, response):
    response.map.header.frame_id = "map"
    response.map.info.width = 3
    response.map.info.resolution = 0.05
    response.map.data = [0, 100, -1]
    return response

def set_map(request, response):
    print("SET", request.map.info.width, request.initial_pose.pose.pose.position.x, flush=True)
    response.success = request.map.info.width > 0
    return response

def load_map(request, response):
    response.result = LoadMap.Response.RESULT_SUCCESS
    return response

for srv in (node.create_service(GetMap, "/get_map", get_map),
            node.create_service(SetMap, "/set_map", set_map)):
    srv.configure_introspection(node.get_clock(), qos_profile_services_default,
                                ServiceIntrospectionState.METADATA)
node.create_service(LoadMap, "/load_map", load_map)  # introspection off
print("READY", flush=True)
executor = SingleThreadedExecutor()
executor.add_node(node)
executor.spin()
"""


@pytest.fixture(scope="module")
def maps(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The maps server (MAPS_NODE) in the module's domain; its log."""
    log = tmp_path_factory.mktemp("maps") / "maps.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(JAZZY_PYTHON), "-c", MAPS_NODE], env=jazzy_env(domain),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while b"READY" not in log.read_bytes():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    yield log
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
