"""The demo robot: twelve real rclpy node processes on ROS domain 91."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import rclpy
from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState
from rcl_interfaces.msg import Log
from rcl_interfaces.srv import GetParameters
from rclpy.action import ActionClient
from rclpy.client import Client
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future
from sensor_msgs.msg import Temperature
from std_srvs.srv import Trigger
from test_msgs.action import Fibonacci

from gateway.demo.nodes import Fault, lidar_faults
from gateway.demo.robot import NAMESPACES, NODES, Robot, full_name, ros_env
from tests.domains import next_domain

DOMAIN = next_domain()

# rosidl_generator_py (imported lazily by rclpy) imports lark, which imports the deprecated
# sre_parse module: import it now, outside pytest's filterwarnings=error.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401


def test_lidar_faults_demo_values_raise_all_three() -> None:
    params = {"min_range": 10.0, "max_range": 5.0, "scan_frequency": 25.0}
    faults = lidar_faults(params)
    assert [(f.code, f.severity) for f in faults] == [
        ("LIDAR_RANGE_INVALID", 2),
        ("LIDAR_FREQ_UNSUPPORTED", 1),
        ("LIDAR_CALIBRATION_REQUIRED", 0),
    ]
    assert all(isinstance(f, Fault) and f.message for f in faults)


def test_lidar_faults_clear_when_fixed_and_calibrated() -> None:
    params = {"min_range": 0.1, "max_range": 30.0, "scan_frequency": 20.0}
    assert lidar_faults(params, calibrated=True) == []
    assert [f.code for f in lidar_faults(params)] == ["LIDAR_CALIBRATION_REQUIRED"]
    equal = {"min_range": 5.0, "max_range": 5.0, "scan_frequency": 10.0}
    assert [f.code for f in lidar_faults(equal, calibrated=True)] == ["LIDAR_RANGE_INVALID"]


def test_ros_env_is_localhost_with_short_lease_profile() -> None:
    env = ros_env(DOMAIN, base={"PATH": "/bin"})
    assert env["PATH"] == "/bin"
    assert env["ROS_DOMAIN_ID"] == str(DOMAIN)
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert env["RMW_IMPLEMENTATION"] == "rmw_fastrtps_cpp"
    assert "<leaseDuration>" in Path(env["FASTDDS_DEFAULT_PROFILES_FILE"]).read_text()
    assert [full_name(n) for n in ("temp_sensor", "managed_lifecycle")] == [
        "/powertrain/engine/temp_sensor",
        "/managed_lifecycle",
    ]


class Ros:
    """A private rclpy context, node and executor for the test process."""

    def __init__(self) -> None:
        self.context = rclpy.Context()
        rclpy.init(
            context=self.context,
            domain_id=DOMAIN,
            signal_handler_options=SignalHandlerOptions.NO,
        )
        self.node = Node("demo_robot_test", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def wait(self, future: Future, timeout: float) -> bool:
        """Spin until future is done or timeout elapses; return whether it is done."""
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)
        return future.done()

    def result(self, future: Future, timeout: float = 30.0) -> Any:
        """Spin until future is done and return its (non-None) result (a generous budget: a
        new subscription matches late on a loaded machine)."""
        assert self.wait(future, timeout), "no answer in time"
        result = future.result()
        assert result is not None
        return result

    def call(self, client: Client[Any, Any], request: Any, budget: float = 30.0) -> Any:
        """A service call, sent again every 5 s until answered: a server may drop the answer to
        a new client whose reply reader its DDS has not matched yet (rmw_fastrtps waits 100 ms
        for the match), and every call here may be repeated."""
        deadline = time.monotonic() + budget
        while True:
            future = client.call_async(request)
            if self.wait(future, min(5.0, max(0.1, deadline - time.monotonic()))):
                return self.result(future)
            client.remove_pending_request(future)
            assert time.monotonic() < deadline, "no answer in time"

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin until condition() holds or timeout elapses."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            self.executor.spin_once(timeout_sec=0.05)
        return True

    def ready_client(self, srv_type: Any, name: str, timeout: float = 30.0) -> Client[Any, Any]:
        """Create a client and wait (spinning) until its service is on the graph."""
        client: Client[Any, Any] = self.node.create_client(srv_type, name)
        assert self.wait_until(client.service_is_ready, timeout), f"{name} never appeared"
        return client

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


@pytest.fixture(scope="module")
def robot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Robot]:
    log_dir: Path = tmp_path_factory.mktemp("demo_robot_logs")
    started = Robot.start(DOMAIN, log_dir=log_dir)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def ros(robot: Robot) -> Iterator[Ros]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        mp.setenv("ROS_DOMAIN_ID", str(DOMAIN))
        handle = Ros()
        try:
            yield handle
        finally:
            handle.close()


@pytest.mark.integration
def test_all_nodes_appear_with_namespaces(robot: Robot, ros: Ros) -> None:
    wanted = {(name, NAMESPACES[name]) for name in NODES}

    def all_seen() -> bool:
        return wanted <= set(ros.node.get_node_names_and_namespaces())

    # ~3 s on an idle 2-core machine; 15 s leaves room for a loaded CI runner.
    assert ros.wait_until(all_seen, 15.0), sorted(
        wanted - set(ros.node.get_node_names_and_namespaces())
    )
    assert all(robot.alive().values())


@pytest.mark.integration
def test_temperature_sample(ros: Ros) -> None:
    got: Future = Future()

    def on_sample(msg: Temperature) -> None:
        if not got.done():
            got.set_result(msg)

    sub = ros.node.create_subscription(Temperature, "/powertrain/engine/temperature", on_sample, 10)
    try:
        assert 85.0 <= ros.result(got).temperature <= 95.0
    finally:
        ros.node.destroy_subscription(sub)


@pytest.mark.integration
def test_lidar_errors_reach_rosout(ros: Ros) -> None:
    qos = QoSProfile(
        depth=100,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    got: Future = Future()

    def on_log(msg: Log) -> None:
        if msg.name == "perception.lidar.lidar_sensor" and msg.level == Log.ERROR:
            if not got.done():
                got.set_result(msg)

    sub = ros.node.create_subscription(Log, "/rosout", on_log, qos)
    try:
        assert "LIDAR_RANGE_INVALID" in ros.result(got).msg
    finally:
        ros.node.destroy_subscription(sub)


@pytest.mark.integration
def test_lidar_calibrate(ros: Ros) -> None:
    client = ros.ready_client(Trigger, "/perception/lidar/calibrate")
    assert ros.call(client, Trigger.Request()).success


@pytest.mark.integration
def test_lifecycle_node_is_active(ros: Ros) -> None:
    client = ros.ready_client(GetState, "/managed_lifecycle/get_state")
    state = ros.call(client, GetState.Request()).current_state
    assert state.id == State.PRIMARY_STATE_ACTIVE


@pytest.mark.integration
def test_demo_lifecycle_nodes_start_unconfigured_and_active(ros: Ros) -> None:
    for name, want in (("lifecycle_standby", State.PRIMARY_STATE_UNCONFIGURED),
                       ("lifecycle_worker", State.PRIMARY_STATE_ACTIVE)):
        client = ros.ready_client(GetState, f"/{name}/get_state")
        assert ros.call(client, GetState.Request()).current_state.id == want


def _send_goal(ros: Ros, client: ActionClient[Any, Any, Any], order: int) -> Any:
    """Send a Fibonacci goal and return its goal handle."""
    return ros.result(client.send_goal_async(Fibonacci.Goal(order=order)))


@pytest.mark.integration
def test_fibonacci_action(ros: Ros) -> None:
    client: ActionClient[Any, Any, Any] = ActionClient(
        ros.node, Fibonacci, "/powertrain/engine/long_calibration"
    )
    try:
        assert ros.wait_until(client.server_is_ready, 30.0)
        rejected = _send_goal(ros, client, 51)
        assert not rejected.accepted
        accepted = _send_goal(ros, client, 5)
        assert accepted.accepted
        result = ros.result(accepted.get_result_async())
        assert list(result.result.sequence) == [0, 1, 1, 2, 3, 5]
    finally:
        client.destroy()


@pytest.mark.integration
def test_parameters_unresponsive_and_responsive(ros: Ros) -> None:
    silent = ros.ready_client(GetParameters, "/unresponsive_param/get_parameters")
    started = time.monotonic()
    future = silent.call_async(GetParameters.Request(names=["anything"]))
    assert not ros.wait(future, 1.0)
    assert time.monotonic() - started < 10.0  # the wait returned: the call does not block
    silent.remove_pending_request(future)

    live = ros.ready_client(GetParameters, "/powertrain/engine/temp_sensor/get_parameters")
    answer = ros.call(live, GetParameters.Request(names=["publish_rate"]))
    assert [v.double_value for v in answer.values] == [2.0]


@pytest.mark.integration
def test_stop_leaves_no_process(robot: Robot) -> None:
    pids = robot.pids
    codes = robot.stop(timeout=10.0)
    assert codes == {name: 0 for name in NODES}
    assert not any(robot.alive().values())
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


STARTER = """
import sys, time
from gateway.demo.robot import Robot
robot = Robot.start(int(sys.argv[1]), nodes=("status_sensor", "lidar_sensor"))
print(" ".join(str(p) for p in robot.pids.values()), flush=True)
time.sleep(120)
"""


@pytest.mark.integration
def test_nodes_leave_when_their_starter_dies_without_stopping_them(domain: int) -> None:
    import subprocess
    import sys

    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(domain)],
                               stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parents[2])
    try:
        assert starter.stdout is not None
        pids = [int(p) for p in starter.stdout.readline().split()]
        assert len(pids) == 2
    finally:
        starter.kill()  # as a gateway leaving by _exit at its stop deadline: no cleanup runs
        starter.communicate()

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    deadline = time.monotonic() + 60
    while not all(gone(p) for p in pids):
        assert time.monotonic() < deadline, f"demo nodes {pids} outlived their starter"
        time.sleep(0.2)
