"""A Jazzy robot for the suite: runs under `.jazzy/bin/python` (ROS 2 Jazzy, Fast DDS 2.14).

Imports nothing of the gateway: only the Jazzy prefix's own packages and, with `--reporter`,
`diag_fault_reporter` as installed for a robot. Nodes (one process, one executor):

- `jz_sensor`: `/jz/temperature` (sensor_msgs/Temperature, reliable, 5 Hz), `/jz/scan_rate`
  (std_msgs/Float64, best effort, 5 Hz), `/jz/map_info` (std_msgs/String, latched, once),
  `/jz/command` (std_msgs/String) echoed to `/jz/command_echo` (latched); logs on /rosout;
  `/diagnostics` with `jz motor` at ERROR; an ERROR log line `jz bus timeout` every 2 s.
- `jz_calib`: services `calibrate` (std_srvs/Trigger) and `set_enabled` (std_srvs/SetBool);
  action `fibonacci` (test_msgs/action/Fibonacci, feedback every 0.1 s, cancelable;
  aborted from order 100).
- `jz_params`: parameters of eight types.
- `jz_lifecycle`: a lifecycle node (rclpy.lifecycle), starts unconfigured.
- `jz_reporter` (with `--reporter`): a FaultReporter; `report` (SetBool: true reports
  JZ_REPORTED FAILED, false PASSED) and `pending` (Trigger: the unacknowledged count).

Prints `READY` once every node exists.
"""

from __future__ import annotations

import sys
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.lifecycle import State, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Temperature
from std_msgs.msg import Float64, String
from std_srvs.srv import SetBool, Trigger
from test_msgs.action import Fibonacci

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
BEST_EFFORT = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)
ABORT_ORDER = 100  # a Fibonacci goal of this order or more is aborted


class Sensor(Node):
    def __init__(self) -> None:
        super().__init__("jz_sensor")
        self.temp = self.create_publisher(Temperature, "/jz/temperature", 10)
        self.rate = self.create_publisher(Float64, "/jz/scan_rate", BEST_EFFORT)
        self.info = self.create_publisher(String, "/jz/map_info", LATCHED)
        self.echo = self.create_publisher(String, "/jz/command_echo", LATCHED)
        self.diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(String, "/jz/command", self.on_command, 10)
        self.info.publish(String(data="jazzy map v1"))
        self.n = 0
        self.create_timer(0.2, self.tick)
        self.create_timer(2.0, self.slow)

    def on_command(self, msg: String) -> None:
        self.get_logger().info(f"command {msg.data}")
        self.echo.publish(String(data=msg.data))

    def tick(self) -> None:
        self.n += 1
        self.temp.publish(Temperature(temperature=20.0 + self.n % 10, variance=0.5))
        self.rate.publish(Float64(data=float(self.n)))

    def slow(self) -> None:
        self.get_logger().info(f"jazzy sensor alive {self.n}")
        self.get_logger().error("jz bus timeout")
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [DiagnosticStatus(level=DiagnosticStatus.ERROR, name="jz motor",
                                       message="jz motor overcurrent", hardware_id="jz")]
        self.diag.publish(arr)


class Calib(Node):
    def __init__(self) -> None:
        super().__init__("jz_calib")
        group = ReentrantCallbackGroup()
        self.enabled = False
        self.create_service(Trigger, "~/calibrate", self.calibrate, callback_group=group)
        self.create_service(SetBool, "~/set_enabled", self.set_enabled, callback_group=group)
        ActionServer(self, Fibonacci, "~/fibonacci", self.execute, callback_group=group,
                     goal_callback=lambda goal: GoalResponse.ACCEPT,
                     cancel_callback=lambda handle: CancelResponse.ACCEPT)

    def calibrate(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        resp.success, resp.message = True, "jazzy calibrated"
        return resp

    def set_enabled(self, req: SetBool.Request, resp: SetBool.Response) -> SetBool.Response:
        self.enabled = bool(req.data)
        resp.success, resp.message = True, f"enabled={self.enabled}"
        return resp

    def execute(self, handle):  # type: ignore[no-untyped-def]
        seq = [0, 1]
        if handle.request.order >= ABORT_ORDER:  # the action bridge's fault
            handle.abort()
            return Fibonacci.Result(sequence=seq)
        for _ in range(1, handle.request.order):
            if handle.is_cancel_requested:
                handle.canceled()
                return Fibonacci.Result(sequence=seq)
            seq.append(seq[-1] + seq[-2])
            handle.publish_feedback(Fibonacci.Feedback(sequence=seq))
            time.sleep(0.1)
        handle.succeed()
        return Fibonacci.Result(sequence=seq)


class Params(Node):
    def __init__(self) -> None:
        super().__init__("jz_params")
        self.declare_parameter("enabled", True)
        self.declare_parameter("count", 7)
        self.declare_parameter("gain", 1.5)
        self.declare_parameter("label", "jazzy")
        self.declare_parameter("flags", [True, False])
        self.declare_parameter("ids", [1, 2, 3])
        self.declare_parameter("weights", [0.5, 0.25])
        self.declare_parameter("names", ["a", "b"])


class Lifecycle(LifecycleNode):
    def __init__(self) -> None:
        super().__init__("jz_lifecycle")

    def on_configure(self, state: State) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        return super().on_deactivate(state)

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS


class Reporter(Node):
    def __init__(self) -> None:
        from diag_fault_reporter import ERROR, FaultReporter

        super().__init__("jz_reporter")
        self.severity = ERROR
        self.reporter = FaultReporter(self)
        self.create_service(SetBool, "~/report", self.report)
        self.create_service(Trigger, "~/pending", self.pending)

    def report(self, req: SetBool.Request, resp: SetBool.Response) -> SetBool.Response:
        if req.data:
            self.reporter.report("JZ_REPORTED", self.severity, "reported by a Jazzy node")
        else:
            self.reporter.report_passed("JZ_REPORTED")
        resp.success, resp.message = True, "reported"
        return resp

    def pending(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        resp.success, resp.message = True, str(self.reporter.pending)
        return resp


def main(argv: list[str]) -> int:
    rclpy.init()
    nodes: list[Node] = [Sensor(), Calib(), Params(), Lifecycle()]
    if "--reporter" in argv:
        nodes.append(Reporter())
    executor = MultiThreadedExecutor(num_threads=4)
    for node in nodes:
        executor.add_node(node)
    print("READY", flush=True)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
