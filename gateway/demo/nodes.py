"""Demo robot nodes; run one per process with ``python -m gateway.demo.nodes <name>``."""

from __future__ import annotations

import ctypes
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, NoReturn

import rclpy
from rcl_interfaces.msg import SetParametersResult
from rcl_interfaces.srv import (
    DescribeParameters,
    GetParameters,
    GetParameterTypes,
    ListParameters,
    SetParameters,
    SetParametersAtomically,
)
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import CallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import LaserScan, Temperature
from std_msgs.msg import Bool, Float32, String
from std_srvs.srv import Trigger
from test_msgs.action import Fibonacci

from gateway.demo.robot import PARENT_ENV
from gateway.faults.reporter import FaultReporter
from gateway.process import hardexit

#: Set when the process is asked to stop; long-running callbacks watch it.
STOP = threading.Event()
_PR_SET_PDEATHSIG = 1
#: Signals that stop a node process; the parent may start us with them blocked.
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
#: Upper bound (s) on a node's teardown before it force-exits.
TEARDOWN_TIMEOUT = 3.0

MAX_FIBONACCI_ORDER = 50
#: Opt-in lighter nodes for fleet benchmarks ("1"): the lidar scans once a second instead of
#: 5 times, and the node spins on one executor thread (a lab of 100 robots on 2 cores).
LIGHT_ENV = "DIAG_DEMO_LIGHT"
SCAN_PERIOD_S = 0.2
LIGHT_SCAN_PERIOD_S = 1.0


def light() -> bool:
    """True when the opt-in light mode (LIGHT_ENV) is on."""
    return os.environ.get(LIGHT_ENV) == "1"


class Fault(NamedTuple):
    """One active fault: code, severity (0 INFO, 1 WARN, 2 ERROR, 3 CRITICAL) and message."""

    code: str
    severity: int
    message: str


def lidar_faults(params: Mapping[str, Any], calibrated: bool = False) -> list[Fault]:
    """Return the faults implied by the lidar parameters and calibration state."""
    faults: list[Fault] = []
    min_range = float(params["min_range"])
    max_range = float(params["max_range"])
    frequency = float(params["scan_frequency"])
    if min_range >= max_range:
        faults.append(
            Fault(
                "LIDAR_RANGE_INVALID",
                2,
                f"min_range ({min_range}) must be less than max_range ({max_range})",
            )
        )
    if frequency > 20.0:
        faults.append(
            Fault(
                "LIDAR_FREQ_UNSUPPORTED",
                1,
                f"scan_frequency {frequency} Hz exceeds the supported maximum of 20 Hz",
            )
        )
    if not calibrated:
        faults.append(Fault("LIDAR_CALIBRATION_REQUIRED", 0, "calibration required"))
    return faults


def _param(node: Node, name: str) -> Any:
    """Return the current value of a declared parameter."""
    return node.get_parameter(name).value


def _periodic(node: Node, rate_param: str, callback: Callable[[], None]) -> None:
    """Run callback at the rate held in a parameter, re-timed when the parameter changes."""
    timer = node.create_timer(1.0 / float(_param(node, rate_param)), callback)

    def validate(params: list[Parameter]) -> SetParametersResult:
        for p in params:
            if p.name == rate_param and not float(p.value) > 0.0:
                return SetParametersResult(successful=False, reason=f"{rate_param} must be > 0")
        return SetParametersResult(successful=True)

    def retime(params: list[Parameter]) -> None:
        nonlocal timer
        if any(p.name == rate_param for p in params):
            node.destroy_timer(timer)
            timer = node.create_timer(1.0 / float(_param(node, rate_param)), callback)

    node.add_on_set_parameters_callback(validate)
    node.add_post_set_parameters_callback(retime)


def temp_sensor() -> Node:
    """Engine temperature walking between min_temp and max_temp."""
    node = Node("temp_sensor", namespace="/powertrain/engine")
    node.declare_parameter("publish_rate", 2.0)
    node.declare_parameter("min_temp", 85.0)
    node.declare_parameter("max_temp", 95.0)
    node.declare_parameter("temp_step", 0.5)
    pub = node.create_publisher(Temperature, "temperature", 10)
    state = {"value": float(_param(node, "min_temp")), "direction": 1.0}

    def tick() -> None:
        low, high = float(_param(node, "min_temp")), float(_param(node, "max_temp"))
        value = state["value"] + state["direction"] * float(_param(node, "temp_step"))
        if value >= high or value <= low:
            state["direction"] = -1.0 if value >= high else 1.0
            value = min(max(value, low), high)
        state["value"] = value
        msg = Temperature(temperature=value, variance=0.25)
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.header.frame_id = "engine"
        pub.publish(msg)
        node.get_logger().info(f"Engine temperature: {value:.1f} C")

    _periodic(node, "publish_rate", tick)
    return node


def temp_monitor() -> Node:
    """Warns through its logger when the engine temperature exceeds overheat_threshold."""
    node = Node("temp_monitor", namespace="/powertrain/engine")
    node.declare_parameter("overheat_threshold", 110.0)

    def on_temperature(msg: Temperature) -> None:
        threshold = float(_param(node, "overheat_threshold"))
        if msg.temperature > threshold:
            node.get_logger().warning(
                f"engine overheating: {msg.temperature:.1f} C > {threshold:.1f} C",
                throttle_duration_sec=2.0,
            )

    node.create_subscription(Temperature, "temperature", on_temperature, 10)
    # Deliberate misconfiguration for the graph watchdog to find: this subscription asks for
    # TRANSIENT_LOCAL, which rpm_sensor's VOLATILE publisher cannot offer, so it never
    # receives a message (GRAPH_QOS_MISMATCH).
    late_joiner = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(Float32, "rpm", lambda _msg: None, late_joiner)
    return node


def _float_sensor(name: str, namespace: str, topic: str, wave: Callable[[float], float]) -> Node:
    """A node publishing wave(t) as Float32 on topic at 2 Hz."""
    node = Node(name, namespace=namespace)
    pub = node.create_publisher(Float32, topic, 10)

    def tick() -> None:
        t = node.get_clock().now().nanoseconds / 1e9
        pub.publish(Float32(data=float(wave(t))))

    node.create_timer(0.5, tick)
    return node


def rpm_sensor() -> Node:
    """Engine speed around 2500 rpm."""
    return _float_sensor(
        "rpm_sensor", "/powertrain/engine", "rpm", lambda t: 2500.0 + 300.0 * math.sin(t / 5.0)
    )


def pressure_sensor() -> Node:
    """Brake line pressure around 50 bar."""
    return _float_sensor(
        "pressure_sensor", "/chassis/brakes", "pressure", lambda t: 50.0 + 2.0 * math.sin(t / 3.0)
    )


def status_sensor() -> Node:
    """Front-left door state, published every 2 s."""
    node = Node("status_sensor", namespace="/body/door/front_left")
    is_open = node.create_publisher(Bool, "is_open", 10)
    state = node.create_publisher(String, "state", 10)

    def tick() -> None:
        is_open.publish(Bool(data=False))
        state.publish(String(data="closed"))

    node.create_timer(2.0, tick)
    return node


def lidar_sensor() -> Node:
    """Lidar with deliberately faulty parameters, logging and reporting its faults every 2 s."""
    node = Node("lidar_sensor", namespace="/perception/lidar")
    period = LIGHT_SCAN_PERIOD_S if light() else SCAN_PERIOD_S
    reporter = FaultReporter(node)
    node.declare_parameter("min_range", 10.0)
    node.declare_parameter("max_range", 5.0)
    node.declare_parameter("scan_frequency", 25.0)
    node.declare_parameter("angular_resolution", 0.5)
    pub = node.create_publisher(LaserScan, "scan", 10)
    calibrated = threading.Event()
    count = 360

    def scan() -> None:
        t = node.get_clock().now()
        phase = t.nanoseconds / 1e9
        msg = LaserScan(
            angle_min=-math.pi,
            angle_max=math.pi,
            angle_increment=2.0 * math.pi / count,
            scan_time=period,
            range_min=0.1,
            range_max=30.0,
            ranges=[5.0 + 2.0 * math.sin(i * math.pi / 45.0 + phase) for i in range(count)],
        )
        msg.header.stamp = t.to_msg()
        msg.header.frame_id = "lidar"
        pub.publish(msg)

    def check() -> None:
        params = {n: _param(node, n) for n in ("min_range", "max_range", "scan_frequency")}
        log = node.get_logger()
        active = lidar_faults(params, calibrated.is_set())
        for fault in active:
            reporter.report(fault.code, fault.severity, fault.message)
        known = {"LIDAR_RANGE_INVALID", "LIDAR_FREQ_UNSUPPORTED", "LIDAR_CALIBRATION_REQUIRED"}
        for code in sorted(known - {f.code for f in active}):
            reporter.report_passed(code)
        for fault in active:
            text = f"[{fault.code}] {fault.message}"
            # rclpy forbids one call site logging at several severities: one line per level.
            if fault.severity >= 2:
                log.error(text)
            elif fault.severity == 1:
                log.warning(text)
            else:
                log.info(text)

    def calibrate(_req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        calibrated.set()
        res.success, res.message = True, "lidar calibrated"
        return res

    node.create_timer(period, scan)
    node.create_timer(2.0, check)
    node.create_service(Trigger, "calibrate", calibrate)
    return node


def actuator() -> Node:
    """Brake actuator: publishes the last commanded pressure at 2 Hz."""
    node = Node("actuator", namespace="/chassis/brakes")
    pub = node.create_publisher(Float32, "pressure", 10)
    last = {"value": 0.0}

    def on_command(msg: Float32) -> None:
        last["value"] = float(msg.data)

    node.create_subscription(Float32, "command", on_command, 10)
    node.create_timer(0.5, lambda: pub.publish(Float32(data=last["value"])))
    return node


def controller() -> Node:
    """Light controller: status follows the last command (published on change and at 1 Hz)."""
    node = Node("controller", namespace="/body/lights")
    pub = node.create_publisher(Bool, "status", 10)
    last = {"value": False}

    def on_command(msg: Bool) -> None:
        last["value"] = bool(msg.data)
        pub.publish(Bool(data=last["value"]))

    node.create_subscription(Bool, "command", on_command, 10)
    node.create_timer(1.0, lambda: pub.publish(Bool(data=last["value"])))
    return node


def calibration() -> Node:
    """Engine calibration service applying calibration_offset."""
    node = Node("calibration", namespace="/powertrain/engine")
    node.declare_parameter("calibration_offset", 0.0)

    def calibrate(_req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        offset = float(_param(node, "calibration_offset"))
        res.success, res.message = True, f"engine calibrated with offset {offset}"
        node.get_logger().info(res.message)
        return res

    node.create_service(Trigger, "calibrate", calibrate)
    return node


def long_calibration() -> Node:
    """Fibonacci action server producing one element (and a feedback) every 0.5 s."""
    node = Node("long_calibration", namespace="/powertrain/engine")

    def on_goal(goal: Fibonacci.Goal) -> GoalResponse:
        ok = 0 <= goal.order <= MAX_FIBONACCI_ORDER
        return GoalResponse.ACCEPT if ok else GoalResponse.REJECT

    def execute(handle: ServerGoalHandle) -> Fibonacci.Result:
        sequence = [0, 1][: handle.request.order + 1]
        while len(sequence) <= handle.request.order:
            if STOP.wait(0.5):
                handle.abort()
                return Fibonacci.Result(sequence=sequence)
            if handle.is_cancel_requested:
                handle.canceled()
                return Fibonacci.Result(sequence=sequence)
            sequence.append(sequence[-1] + sequence[-2])
            handle.publish_feedback(Fibonacci.Feedback(sequence=sequence))
        handle.succeed()
        return Fibonacci.Result(sequence=sequence)

    ActionServer(
        node,
        Fibonacci,
        "long_calibration",
        execute,
        goal_callback=on_goal,
        cancel_callback=lambda _h: CancelResponse.ACCEPT,
        callback_group=ReentrantCallbackGroup(),
    )
    return node


def managed_lifecycle(name: str = "managed_lifecycle") -> Node:
    """A lifecycle node that configures and activates itself on start."""
    try:
        from rclpy.lifecycle import (  # noqa: PLC0415 - rclpy.lifecycle only for lifecycle nodes
            LifecycleNode,
        )
    except ImportError:  # rclpy without lifecycle support: a plain node keeps the graph intact
        return Node(name, namespace="/")

    node = LifecycleNode(name, namespace="/")
    node.trigger_configure()
    node.trigger_activate()
    return node


def _lifecycle(name: str, activate: bool) -> Node:
    """A managed node left unconfigured, or configured and activated on start."""
    from rclpy.lifecycle import (  # noqa: PLC0415 - rclpy.lifecycle only for lifecycle nodes
        LifecycleNode,
    )

    node = LifecycleNode(name, namespace="/")
    if activate:
        node.trigger_configure()
        node.trigger_activate()
    return node


def lifecycle_standby() -> Node:
    """A managed node left unconfigured until someone starts it."""
    return _lifecycle("lifecycle_standby", activate=False)


def lifecycle_worker() -> Node:
    """A managed node brought to active on start."""
    return _lifecycle("lifecycle_worker", activate=True)


class _NeverExecute(CallbackGroup):
    """A callback group whose entities executors never wait on, so requests are never taken."""

    def can_execute(self, entity: Any) -> bool:
        return False

    def beginning_execution(self, entity: Any) -> bool:
        return False

    def ending_execution(self, entity: Any) -> None:
        pass


_PARAMETER_SERVICES = {
    "describe_parameters": DescribeParameters,
    "get_parameters": GetParameters,
    "get_parameter_types": GetParameterTypes,
    "list_parameters": ListParameters,
    "set_parameters": SetParameters,
    "set_parameters_atomically": SetParametersAtomically,
}


def unresponsive_param() -> Node:
    """Advertises the standard parameter services but never answers them."""
    node = Node("unresponsive_param", namespace="/", start_parameter_services=False)
    group = _NeverExecute()
    for name, srv_type in _PARAMETER_SERVICES.items():
        node.create_service(srv_type, f"~/{name}", lambda _req, res: res, callback_group=group)
    return node


FACTORIES: dict[str, Callable[[], Node]] = {
    "temp_sensor": temp_sensor,
    "temp_monitor": temp_monitor,
    "rpm_sensor": rpm_sensor,
    "pressure_sensor": pressure_sensor,
    "status_sensor": status_sensor,
    "lidar_sensor": lidar_sensor,
    "actuator": actuator,
    "controller": controller,
    "calibration": calibration,
    "long_calibration": long_calibration,
    "managed_lifecycle": managed_lifecycle,
    # the same node under the reference's name (the medkit profile's demo, robot.RENAMES)
    "managed_lifecycle_active": lambda: managed_lifecycle("managed_lifecycle_active"),
    "unresponsive_param": unresponsive_param,
    "lifecycle_standby": lifecycle_standby,
    "lifecycle_worker": lifecycle_worker,
}


def _exit_if_stalled(seconds: float) -> threading.Timer:
    """Start a watchdog that force-exits (code 0) if teardown hangs inside DDS (it is never
    cancelled: the process leaves through os._exit either way)."""

    def bail() -> None:
        print(f"teardown stalled for {seconds} s; forcing exit", file=sys.stderr, flush=True)
        os._exit(0)

    watchdog = threading.Timer(seconds, bail)
    watchdog.daemon = True
    watchdog.start()
    return watchdog


def _stop_with_starter() -> None:
    """SIGTERM (taken by the sigwait below) when the robot's starter dies, even by _exit or
    SIGKILL: a gateway that left by its stop deadline leaves no demo node behind."""
    parent = os.environ.get(PARENT_ENV)
    if parent is None or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the starter was gone before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def run(name: str) -> NoReturn:
    """Run one demo node until SIGINT/SIGTERM, then exit the process with code 0."""
    # Block the stop signals before any DDS thread exists (threads inherit the mask) and take
    # them synchronously below, so no DDS system call is ever interrupted by them.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    _stop_with_starter()
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = FACTORIES[name]()
    executor = SingleThreadedExecutor() if light() else MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, name=f"{name}-executor", daemon=True)
    spinner.start()
    signal.sigwait(STOP_SIGNALS)
    STOP.set()
    _exit_if_stalled(TEARDOWN_TIMEOUT)
    # The Python watchdog above needs the GIL, which rclpy keeps while DDS teardown can
    # deadlock inside Fast DDS; this one leaves without it, a second later.
    hardexit.arm(TEARDOWN_TIMEOUT + 1.0)
    executor.shutdown(timeout_sec=TEARDOWN_TIMEOUT)
    spinner.join(timeout=TEARDOWN_TIMEOUT)
    node.destroy_node()
    rclpy.try_shutdown()
    # Leave without interpreter finalization: DDS threads can stall there under load, after
    # the teardown above already finished (the watchdog stays armed until this point).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m gateway.demo.nodes <node_name>``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in FACTORIES:
        print(f"usage: python -m gateway.demo.nodes {{{','.join(FACTORIES)}}}", file=sys.stderr)
        return 2
    return run(args[0])


if __name__ == "__main__":
    sys.exit(main())
