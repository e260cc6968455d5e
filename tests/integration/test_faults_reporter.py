"""Faults from FaultReporter: the demo lidar, the scope rule, SIGKILL and retried reports."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from std_srvs.srv import Trigger

from gateway.demo.robot import Robot
from gateway.faults.reporter import (
    ACK_TOPIC,
    REPORT_TOPIC,
    decode_ack,
    decode_reports,
    encode_reports,
)
from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.integration.test_faults_support import (
    RosSide,
    faults_by_code,
    kill_gateway,
    wait_until,
)

pytestmark = pytest.mark.integration

LIDAR = "/perception/lidar/lidar_sensor"
LIDAR_CODES = {"LIDAR_RANGE_INVALID": "ERROR", "LIDAR_FREQ_UNSUPPORTED": "WARN",
               "LIDAR_CALIBRATION_REQUIRED": "INFO"}


ROBOT_NODES = ("lidar_sensor",)
class Holder:
    """The module's gateway, restartable with the same settings and state directory."""

    def __init__(self, domain: int, settings: list[str], log: Path) -> None:
        self.domain, self.settings, self.log = domain, settings, log
        self.gw = Gateway(free_port(), domain, settings, log)

    def restart(self) -> Gateway:
        self.gw = Gateway(free_port(), self.domain, self.settings,
                          self.log.with_suffix(f".{time.monotonic_ns()}.log"))
        return self.gw.start()


@pytest.fixture(scope="module")
def holder(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Holder]:
    state = tmp_path_factory.mktemp("state")
    settings = [f"state_dir={state}", "faults.healing_enabled=true",
                "faults.healing_threshold=1", "discovery.refresh_debounce_ms=100",
                "snapshots.timeout_sec=3"]
    h = Holder(domain, settings, tmp_path_factory.mktemp("gw") / "gateway.log")
    h.gw.start()
    yield h
    h.gw.stop()


@pytest.fixture
def gw(holder: Holder) -> Gateway:
    return holder.gw


def test_lidar_faults_confirm_with_severity_and_frames(gw: Gateway) -> None:
    faults = wait_until(lambda: (lambda f: f if set(LIDAR_CODES) <= set(f) else None)(
        faults_by_code(gw)), 30, "the three lidar faults")
    for code, label in LIDAR_CODES.items():
        item = faults[code]
        assert item["severity"] == label
        assert item["source"] == LIDAR
        assert item["x-vendor"]["status"] == "CONFIRMED"
        assert item["x-vendor"]["reporting_sources"] == [LIDAR]
    assert "min_range" in faults["LIDAR_RANGE_INVALID"]["message"]
    own = faults_by_code(gw, "/apps/lidar_sensor/faults")
    assert set(LIDAR_CODES) <= set(own)
    detail = wait_until(lambda: (lambda d: d if d["environment_data"]["snapshots"] else None)(
        gw.get("/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID").json()), 15, "freeze frame")
    assert detail["item"]["code"] == "LIDAR_RANGE_INVALID" and detail["item"]["severity"] == 2
    assert detail["item"]["status"] == {"aggregatedStatus": "active", "testFailed": "1",
                                        "confirmedDTC": "1", "pendingDTC": "0"}
    assert detail["x-vendor"]["severity_label"] == "ERROR"
    assert detail["x-vendor"]["reporting_sources"] == [LIDAR]
    assert set(detail["environment_data"]["extended_data_records"]) == {
        "first_occurrence", "last_occurrence"}
    # entity default: the lidar's own topics, never /rosout or /parameter_events
    (frame,) = detail["environment_data"]["snapshots"]
    assert frame["type"] == "freeze_frame" and frame["name"] == "/perception/lidar/scan"
    assert frame["x-vendor"]["message_type"] == "sensor_msgs/msg/LaserScan"
    assert len(frame["x-vendor"]["full_data"]["ranges"]) == 360
    assert "capture_origin" not in frame["x-vendor"]


def test_scope_rule_own_child_and_mixed_sources(gw: Gateway, ros: RosSide) -> None:
    child = ros.node("child", LIDAR)  # /perception/lidar/lidar_sensor/child: a path child
    other = ros.node("scope_other", "/powertrain/engine")
    wait_until(lambda: {"child", "scope_other"} <= {a["id"] for a in gw.get("/apps").json()[
        "items"]}, 20, "test nodes as apps")
    rc, ro = ros.reporter(child), ros.reporter(other)
    rc.report("SCOPE_CHILD", 2, "child fault")
    rc.report("SCOPE_MIXED", 2, "mixed fault")
    ro.report("SCOPE_MIXED", 2, "mixed fault")
    wait_until(lambda: len(faults_by_code(gw).get("SCOPE_MIXED", {}).get("x-vendor", {}).get(
        "reporting_sources", [])) == 2, 15, "mixed fault with two sources")

    lidar_app = set(faults_by_code(gw, "/apps/lidar_sensor/faults"))
    assert set(LIDAR_CODES) <= lidar_app and "SCOPE_CHILD" in lidar_app
    assert "SCOPE_MIXED" not in lidar_app
    assert set(faults_by_code(gw, "/apps/child/faults")) == {"SCOPE_CHILD"}
    assert "SCOPE_MIXED" not in faults_by_code(gw, "/apps/scope_other/faults")
    perception = set(faults_by_code(gw, "/functions/perception/faults"))
    assert {"SCOPE_CHILD", *LIDAR_CODES} <= perception and "SCOPE_MIXED" not in perception
    host = gw.get("/components").json()["items"][0]["id"]
    assert "SCOPE_MIXED" in faults_by_code(gw, f"/components/{host}/faults")
    body = gw.get("/apps/child/faults").json()
    assert body["x-vendor"] == {"total_count": 1, "count": 1, "entity_id": "child",
                                "source_id": "/perception/lidar/lidar_sensor/child"}
    assert "muted_count" not in body  # correlation metadata only on the global list

    assert_error(gw.get("/apps/lidar_sensor/faults/SCOPE_MIXED"), 404, "resource-not-found")
    assert_error(gw.request("DELETE", "/apps/lidar_sensor/faults/SCOPE_MIXED"), 404)
    assert_error(gw.get("/apps/child/faults/LIDAR_RANGE_INVALID"), 404)
    assert_error(gw.get("/apps/child/faults/NO_SUCH_CODE"), 404)
    assert_error(gw.get("/apps/ghost/faults"), 404)

    # clearing the child's faults touches only its scope
    assert gw.request("DELETE", "/apps/child/faults").status == 204
    everything = faults_by_code(gw, query="?status=all")
    assert everything["SCOPE_CHILD"]["x-vendor"]["status"] == "CLEARED"
    assert everything["SCOPE_MIXED"]["x-vendor"]["status"] == "CONFIRMED"
    assert "SCOPE_CHILD" not in faults_by_code(gw)
    assert "SCOPE_CHILD" in faults_by_code(gw, query="?status=cleared")
    assert_error(gw.get("/faults?status=sideways"), 400, "invalid-parameter")


def test_reporter_fault_heals_and_clears(gw: Gateway, ros: RosSide) -> None:
    node = ros.node("healer", "/perception")
    wait_until(lambda: gw.get("/apps/healer").status == 200, 20, "healer app")
    rep = ros.reporter(node)
    rep.report("HEAL_ME", 1, "warn")  # unfiltered reporter: forwarded at once
    wait_until(lambda: "HEAL_ME" in faults_by_code(gw), 15, "HEAL_ME")
    rep.report_passed("HEAL_ME")
    rep.report_passed("HEAL_ME")
    wait_until(lambda: "HEAL_ME" in faults_by_code(gw, query="?status=healed"), 15, "healed")
    detail = gw.get("/apps/healer/faults/HEAL_ME").json()
    assert detail["item"]["status"]["aggregatedStatus"] == "cleared"
    assert detail["x-vendor"]["status"] == "HEALED"
    rep.report("HEAL_ME", 1, "warn again")  # healed is latched until it confirms again
    rep.report("HEAL_ME", 1, "warn again")
    wait_until(lambda: "HEAL_ME" in faults_by_code(gw), 15, "confirmed again")
    assert gw.request("DELETE", "/apps/healer/faults/HEAL_ME").status == 204
    detail = gw.get("/apps/healer/faults/HEAL_ME").json()
    assert detail["x-vendor"]["status"] == "CLEARED"
    assert detail["item"]["status"]["confirmedDTC"] == "0"
    assert wait_until(lambda: rep.pending == 0, 10, "acks")


def test_a_report_burst_travels_in_few_messages_and_lands_in_order(gw: Gateway,
                                                                   ros: RosSide) -> None:
    """500 reports in a tight loop: coalesced on the wire, each applied once, last one wins."""
    node = ros.node("burster", "/perception")
    wait_until(lambda: gw.get("/apps/burster").status == 200, 20, "burster app")
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE)
    sizes: list[int] = []  # reports per message of this reporter, as seen on the topic
    lock = threading.Lock()
    # Retries are tested elsewhere: a resend here (an ack later than the tests' 0.3 s retry
    # interval on a busy machine) would be counted as traffic of the burst.
    rep = ros.reporter(node, max_pending=5000, retry_interval_sec=30.0)

    def on_report(msg: Any) -> None:
        if rep.reporter_id in msg.data:
            with lock:
                burst = [r for r in decode_reports(msg.data)[2]  # type: ignore[index]
                         if r["code"] != "BURST_WARMUP"]
                if burst:
                    sizes.append(len(burst))

    node.create_subscription(String, REPORT_TOPIC, on_report, qos)
    wait_until(lambda: rep._pub.get_subscription_count() >= 2, 20, "gateway and listener")
    # One acknowledged report first: an ack sent before the gateway's ack writer has matched
    # this reporter is lost, and the burst's reports would come again.
    rep.report("BURST_WARMUP", 2, "warm-up")
    assert wait_until(lambda: rep.pending == 0, 60, "the warm-up report acknowledged")
    before = gw.get("/health").json()["x-vendor-fault-manager"]
    for i in range(500):
        rep.report(f"BURST_{i % 5}", 2, f"m{i}")
    assert wait_until(lambda: rep.pending == 0, 60, "every report acknowledged")
    wait_until(lambda: sum(sizes) >= 500, 20, "the listener has every message")
    with lock:
        assert sum(sizes) == 500 and len(sizes) <= 100, sizes
    after = gw.get("/health").json()["x-vendor-fault-manager"]
    # Other nodes of this module report too: at least ours arrived, none of them twice.
    assert after["reports_received"] - before["reports_received"] >= 500
    assert after["reports_duplicate"] == before["reports_duplicate"]
    faults = faults_by_code(gw)
    for k in range(5):  # each code's last description: the reports kept their order
        assert faults[f"BURST_{k}"]["message"] == f"m{495 + k}"
    assert gw.request("DELETE", "/apps/burster/faults").status == 204


def test_fixing_lidar_parameters_heals_its_faults(gw: Gateway, ros: RosSide) -> None:
    tool = ros.node("param_tool", "/tools")
    ros.set_parameter(tool, LIDAR, "scan_frequency", 10.0)
    wait_until(lambda: "LIDAR_FREQ_UNSUPPORTED" in faults_by_code(gw, query="?status=healed"),
               20, "frequency fault healed")
    ros.call(tool, Trigger, "/perception/lidar/calibrate", Trigger.Request())
    wait_until(lambda: "LIDAR_CALIBRATION_REQUIRED" in faults_by_code(
        gw, query="?status=healed"), 20, "calibration fault healed")
    active = faults_by_code(gw)
    assert "LIDAR_FREQ_UNSUPPORTED" not in active and "LIDAR_RANGE_INVALID" in active


def test_cleared_lidar_fault_reactivates(gw: Gateway) -> None:
    assert gw.request("DELETE", "/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID").status == 204
    # still invalid: the lidar's next report is a new occurrence
    item = wait_until(lambda: faults_by_code(gw).get("LIDAR_RANGE_INVALID") if (
        faults_by_code(gw).get("LIDAR_RANGE_INVALID", {}).get("x-vendor", {}).get(
            "occurrence_count") == 2) else None, 15, "reactivation")
    assert item["x-vendor"]["status"] == "CONFIRMED"


def test_sigkill_loses_no_confirmed_fault(holder: Holder, ros: RosSide) -> None:
    gw = holder.gw
    before = faults_by_code(gw, query="?status=all")
    confirmed = {c: i for c, i in before.items() if i["x-vendor"]["status"] == "CONFIRMED"}
    assert {"LIDAR_RANGE_INVALID", "SCOPE_MIXED"} <= set(confirmed)
    node = ros.node("while_down", "/perception")
    rep = ros.reporter(node)
    kill_gateway(gw)
    rep.report("REPORTED_WHILE_DOWN", 2, "sent while the gateway was dead")
    gw = holder.restart()
    # the reporter resends with a backoff that grew while the gateway was down: a loaded
    # machine needs a generous budget
    after = wait_until(lambda: (lambda f: f if "REPORTED_WHILE_DOWN" in f else None)(
        faults_by_code(gw, query="?status=all")), 60, "the retried report")
    for code, item in confirmed.items():
        assert after[code]["x-vendor"]["status"] in ("CONFIRMED", "HEALED"), code
        assert after[code]["x-vendor"]["first_occurrence"] == item["x-vendor"][
            "first_occurrence"]
        # the lidar keeps reporting: a report that reached the gateway after `before` was
        # read is a real new occurrence; none may be lost
        assert after[code]["x-vendor"]["occurrence_count"] >= item["x-vendor"][
            "occurrence_count"]
    assert after["REPORTED_WHILE_DOWN"]["x-vendor"]["occurrence_count"] == 1
    wait_until(lambda: rep.pending == 0, 30, "ack after restart")
    health = gw.get("/health").json()["x-vendor-fault-manager"]
    assert health["persistent"] is True


def test_retried_report_is_applied_once_across_restart(holder: Holder, ros: RosSide) -> None:
    node = ros.node("raw_reporter", "/raw")
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE)
    pub = node.create_publisher(String, REPORT_TOPIC, qos)
    acked: set[int] = set()
    lock = threading.Lock()

    def on_ack(msg: Any) -> None:
        ack = decode_ack(msg.data)
        if ack and ack[0] == "raw-1":
            with lock:
                acked.update(ack[1])

    node.create_subscription(String, ACK_TOPIC, on_ack, qos)

    def send_until(seq: int, condition: Any, what: str) -> None:
        text = encode_reports("raw-1", "/raw/raw_reporter", [
            {"seq": seq, "code": "DEDUP_X", "event": "FAILED", "severity": 2,
             "description": "once", "stamp_ns": 0}])

        def done() -> bool:
            if condition():
                return True
            pub.publish(String(data=text))
            return False
        wait_until(done, 60, what)

    def send_until_acked(seq: int) -> None:
        def condition() -> bool:
            with lock:
                return seq in acked
        send_until(seq, condition, f"ack of seq {seq}")

    send_until_acked(1)
    gw = holder.gw
    assert faults_by_code(gw)["DEDUP_X"]["x-vendor"]["occurrence_count"] == 1
    assert gw.request("DELETE", "/faults").status == 204
    assert faults_by_code(gw, query="?status=all")["DEDUP_X"]["x-vendor"]["status"] == "CLEARED"
    kill_gateway(gw)
    with lock:
        acked.clear()
    gw = holder.restart()

    def duplicate_seen() -> bool:
        return bool(gw.get("/health").json()["x-vendor-fault-manager"]["reports_duplicate"])
    # The same report again: counted as a duplicate by the new process (an ack the killed
    # process sent late may still arrive, so the ack alone proves nothing), not applied.
    send_until(1, duplicate_seen, "the resent report counted as a duplicate")
    send_until_acked(1)
    item = faults_by_code(gw, query="?status=all")["DEDUP_X"]
    assert item["x-vendor"]["status"] == "CLEARED"
    assert item["x-vendor"]["occurrence_count"] == 1
    send_until_acked(2)  # a new report is a new occurrence
    item = faults_by_code(gw)["DEDUP_X"]
    assert item["x-vendor"]["status"] == "CONFIRMED"
    assert item["x-vendor"]["occurrence_count"] == 2
