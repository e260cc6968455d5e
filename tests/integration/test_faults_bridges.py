"""Drop-in fault sources with real nodes: /diagnostics, /rosout and action status."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.action import ActionClient, ActionServer
from test_msgs.action import Fibonacci

from tests.conftest import free_port
from tests.harness import Gateway
from tests.integration.test_faults_support import RosSide, faults_by_code, wait_until

pytestmark = pytest.mark.integration

NS = "/bridge_test"


@pytest.fixture(scope="module")
def gw(domain: int, ros: RosSide, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    settings = [f"state_dir={tmp_path_factory.mktemp('state')}",
                "faults.diagnostics_bridge.enabled=true",
                "faults.diagnostics_bridge.code_map.motor temp=MOTOR_OVERHEAT",
                "faults.healing_enabled=true", "faults.healing_threshold=1",
                "faults.rosout_bridge.cooldown_sec=1.0", "discovery.refresh_debounce_ms=100"]
    log = tmp_path_factory.mktemp("gw") / "gateway.log"
    with Gateway(free_port(), domain, settings, log) as g:
        yield g


def status(name: str, level: int, message: str = "") -> DiagnosticStatus:
    return DiagnosticStatus(level=bytes([level]), name=name, message=message,
                            hardware_id="hw-1")


def publish_until(pub: Any, msg: Any, check: Any, what: str) -> Any:
    """Publish msg every 0.3 s until check() is truthy."""
    def attempt() -> Any:
        pub.publish(msg)
        time.sleep(0.2)
        return check()
    return wait_until(attempt, 45, what)


def test_diagnostics_raise_confirm_heal_and_clear(gw: Gateway, ros: RosSide) -> None:
    node = ros.node("diag_pub", NS)
    pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
    wait_until(lambda: gw.get("/apps/diag_pub").status == 200, 20, "diag_pub app")
    bad = DiagnosticArray(status=[status("motor temp", 2, "motor at 95 C"),
                                  status("battery level", 1, "battery low"),
                                  status("sensor link", 3, "no data")])
    faults = publish_until(pub, bad, lambda: (lambda f: f if {
        "MOTOR_OVERHEAT", "BATTERY_LEVEL", "SENSOR_LINK"} <= set(f) else None)(
        faults_by_code(gw)), "diagnostic faults")
    assert faults["MOTOR_OVERHEAT"]["severity"] == "ERROR"  # mapped code
    assert faults["MOTOR_OVERHEAT"]["message"] == "motor at 95 C"
    assert faults["BATTERY_LEVEL"]["severity"] == "WARN"  # name upper-snake-cased
    assert faults["SENSOR_LINK"]["severity"] == "CRITICAL"  # STALE
    # the source is the publishing node, so the app owns the faults
    assert faults["MOTOR_OVERHEAT"]["source"] == f"{NS}/diag_pub"
    assert {"MOTOR_OVERHEAT", "BATTERY_LEVEL"} <= set(faults_by_code(gw, "/apps/diag_pub/faults"))

    ok = DiagnosticArray(status=[status("motor temp", 0), status("battery level", 0)])
    publish_until(pub, ok, lambda: {"MOTOR_OVERHEAT", "BATTERY_LEVEL"} <= set(
        faults_by_code(gw, query="?status=healed")), "healed by OK")
    assert "SENSOR_LINK" in faults_by_code(gw)

    assert gw.request("DELETE", "/apps/diag_pub/faults/SENSOR_LINK").status == 204
    detail = gw.get("/apps/diag_pub/faults/SENSOR_LINK").json()
    assert detail["x-vendor"]["status"] == "CLEARED"
    assert detail["item"]["status"]["aggregatedStatus"] == "cleared"


def test_rosout_errors_raise_faults_with_cooldown(gw: Gateway, ros: RosSide) -> None:
    node = ros.node("logger_node", NS)
    wait_until(lambda: gw.get("/apps/logger_node").status == 200, 20, "logger_node app")
    log = node.get_logger()

    def log_error(n: int) -> None:
        log.error(f"pump failure: pressure {n} bar")

    def log_warning() -> None:
        log.warning("coolant level low")

    def ours() -> dict[str, Any]:
        return {c: i for c, i in faults_by_code(gw, query="?status=all").items()
                if c.startswith("LOG_LOGGER_NODE_")}

    def attempt() -> Any:
        log_error(42)
        log_warning()
        time.sleep(0.3)
        return (lambda f: f if len(f) == 2 else None)(ours())

    faults = wait_until(attempt, 20, "two rosout faults")
    by_sev = {i["severity"]: (c, i) for c, i in faults.items()}
    assert set(by_sev) == {"ERROR", "WARN"}
    code, item = by_sev["ERROR"]
    # the code names the node, not its namespace
    assert code.startswith("LOG_LOGGER_NODE_") and "BRIDGE_TEST" not in code
    assert item["source"] == f"{NS}/logger_node"
    assert item["message"].startswith("pump failure")
    log_error(43)  # same normalized message: same code, no new fault
    time.sleep(0.5)
    assert len(ours()) == 2
    assert code in faults_by_code(gw, "/apps/logger_node/faults")

    assert gw.request("DELETE", f"/apps/logger_node/faults/{code}").status == 204
    assert ours()[code]["x-vendor"]["status"] == "CLEARED"
    time.sleep(1.1)  # past the cooldown
    def reactivated() -> bool:
        log_error(44)
        time.sleep(0.3)
        return ours()[code]["x-vendor"]["occurrence_count"] == 2
    wait_until(reactivated, 15, "reactivation after the cooldown")
    assert ours()[code]["x-vendor"]["status"] == "CONFIRMED"


def test_action_aborts_raise_and_successes_heal(gw: Gateway, ros: RosSide) -> None:
    server_node = ros.node("fib_server", NS)

    def execute(handle: Any) -> Fibonacci.Result:
        if handle.request.order == 13:
            handle.abort()
        else:
            handle.succeed()
        return Fibonacci.Result(sequence=[0, 1])

    ActionServer(server_node, Fibonacci, f"{NS}/fib", execute)
    client_node = ros.node("fib_client", "/tools")
    client = ActionClient(client_node, Fibonacci, f"{NS}/fib")
    wait_until(client.server_is_ready, 20, "action server")

    def run_goal(order: int) -> None:
        fut = client.send_goal_async(Fibonacci.Goal(order=order))
        handle = wait_until(lambda: fut.result() if fut.done() else None, 10, "goal accepted")
        res = handle.get_result_async()
        wait_until(res.done, 10, "goal result")

    def aborted() -> Any:
        run_goal(13)
        time.sleep(0.3)
        return faults_by_code(gw).get("ACTION_FIB_ABORTED")

    item = wait_until(aborted, 25, "ACTION_FIB_ABORTED")
    assert item["severity"] == "ERROR"
    assert item["source"] == f"{NS}/fib_server"
    assert "ACTION_FIB_ABORTED" in faults_by_code(gw, "/apps/fib_server/faults")

    def healed() -> bool:
        run_goal(2)
        time.sleep(0.3)
        return "ACTION_FIB_ABORTED" in faults_by_code(gw, query="?status=healed")

    wait_until(healed, 20, "healed by succeeded goals")
    assert gw.request("DELETE", "/apps/fib_server/faults/ACTION_FIB_ABORTED").status == 204
    assert faults_by_code(gw, query="?status=cleared")["ACTION_FIB_ABORTED"]
