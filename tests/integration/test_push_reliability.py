"""Streams and ids that hold: keep-alives whatever the traffic, ids never reused after a crash.

A real gateway and real nodes (a reporter re-reporting an unchanged fault, a publisher).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.integration.test_faults_support import (
    RosSide,
    SseReader,
    kill_gateway,
    wait_until,
)
from tests.integration.test_push_support import Stream

pytestmark = pytest.mark.integration

NS = "/keepalive_test"
LEVEL = f"/api/v1/apps/pulse/data{NS}/level"
KEEPALIVE_S = 0.5
WINDOW_S = 4.0  # 8 keep-alives are due in it; at least half must come on a loaded machine


class Pulse:
    """A node publishing Float64 at 20 Hz and re-reporting one unchanged fault at 10 Hz."""

    def __init__(self, ros: RosSide) -> None:
        from std_msgs.msg import Float64

        self.node = ros.node("pulse", NS)
        pub = self.node.create_publisher(Float64, f"{NS}/level", 10)
        self.reporter = ros.reporter(self.node)
        self.reports = 0
        self._stop = threading.Event()

        def run() -> None:
            n = 0
            while not self._stop.wait(0.05):
                n += 1
                pub.publish(Float64(data=float(n % 7)))
                if n % 2 == 0:
                    self.reporter.report("PULSE_STUCK", 2, "unchanged")  # the same fault
                    self.reports += 1

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture(scope="module")
def pulse(ros: RosSide) -> Iterator[Pulse]:
    p = Pulse(ros)
    yield p
    p.close()


@pytest.fixture(scope="module")
def gw(domain: int, pulse: Pulse, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("keepalive")
    settings = [f"state_dir={tmp / 'state'}", f"sse.keepalive_sec={KEEPALIVE_S}",
                "discovery.refresh_debounce_ms=100", "snapshots.enabled=false"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps/pulse/data", lambda b: any(i["id"] == f"{NS}/level"
                                                      for i in b["items"]), timeout=30)
        # confirmed: a fault still debouncing changes status once more (an event of its own)
        g.wait_for("/faults", lambda b: any(
            i["fault_code"] == "PULSE_STUCK" and i["x-vendor"]["status"] == "CONFIRMED"
            for i in b["items"]), timeout=60)
        yield g


def keepalives_in_window(comments: list[str]) -> int:
    """Keep-alive comments that arrive within WINDOW_S from now."""
    before = comments.count("keepalive")
    time.sleep(WINDOW_S)
    return comments.count("keepalive") - before


def test_fault_stream_keeps_alive_while_unchanged_faults_are_re_reported(
        gw: Gateway, pulse: Pulse) -> None:
    sse = SseReader(gw)
    try:
        assert sse.status == 200
        wait_until(lambda: "connected" in sse.comments, 10, "the stream open")
        reports = pulse.reports
        got = keepalives_in_window(sse.comments)
        assert pulse.reports - reports >= 10, "the reporter kept re-reporting"
        assert sse.events.empty(), f"an unchanged fault makes no event: {sse.events.get()}"
        assert got >= WINDOW_S / KEEPALIVE_S / 2, f"{got} keep-alives in {WINDOW_S} s"
    finally:
        sse.close()


def test_busy_subscription_and_trigger_streams_keep_alive(gw: Gateway) -> None:
    resp = gw.request("POST", "/apps/pulse/cyclic-subscriptions",
                      {"resource": LEVEL, "interval": "fast", "duration": 60})
    assert resp.status == 201, resp
    sub = Stream(gw.port, resp.json()["event_source"])
    resp = gw.request("POST", "/apps/pulse/triggers", {
        "resource": LEVEL, "trigger_condition": {"condition_type": "OnChange"},
        "multishot": True})
    assert resp.status == 201, resp
    trig = Stream(gw.port, resp.json()["event_source"])
    try:
        sub.next(20)
        trig.next(20)  # both streams carry events every 50 ms
        before = (sub.comments.count("keepalive"), trig.comments.count("keepalive"))
        frames = sub.frames.qsize()
        time.sleep(WINDOW_S)
        assert sub.frames.qsize() - frames >= 10, "the subscription kept delivering"
        need = WINDOW_S / KEEPALIVE_S / 2
        got = (sub.comments.count("keepalive") - before[0],
               trig.comments.count("keepalive") - before[1])
        assert min(got) >= need, f"keep-alives (subscription, trigger) in {WINDOW_S} s: {got}"
    finally:
        sub.close()
        trig.close()


def test_ids_are_not_reused_after_a_crash(domain: int, pulse: Pulse, tmp_path: Path) -> None:
    settings = [f"state_dir={tmp_path / 'state'}", "discovery.refresh_debounce_ms=100",
                "snapshots.enabled=false"]
    port = free_port()

    def make(g: Gateway) -> dict[str, Any]:
        g.wait_for("/apps/pulse/data", lambda b: any(i["id"] == f"{NS}/level"
                                                      for i in b["items"]), timeout=30)
        sub = g.request("POST", "/apps/pulse/cyclic-subscriptions",
                        {"resource": LEVEL, "interval": "slow", "duration": 300})
        trig = g.request("POST", "/apps/pulse/triggers", {
            "resource": LEVEL, "trigger_condition": {"condition_type": "OnChange"}})
        rule = g.request("POST", "/apps/pulse/fault-triggers", {
            "data_name": f"{NS}/level", "operator": ">", "threshold": 500,
            "fault_code": "NEVER_SO_HIGH"})
        assert (sub.status, trig.status, rule.status) == (201, 201, 201), (sub, trig, rule)
        return {"sub": sub.json()["id"], "trig": trig.json()["id"], "rule": rule.json()["id"]}

    first = Gateway(port, domain, settings, tmp_path / "gw1.log").start()
    try:
        old = make(first)
    finally:
        kill_gateway(first)
    again = Gateway(port, domain, settings, tmp_path / "gw2.log").start()
    try:
        new = make(again)
        assert not set(old.values()) & set(new.values()), (old, new)
        # a client re-attaching to its URL from before the crash gets 404, not another stream
        assert_error(again.get(f"/apps/pulse/cyclic-subscriptions/{old['sub']}"), 404)
        assert_error(again.get(f"/apps/pulse/cyclic-subscriptions/{old['sub']}/events"), 404)
        assert_error(again.get(f"/apps/pulse/triggers/{old['trig']}/events"), 404)
        assert_error(again.get(f"/apps/pulse/fault-triggers/{old['rule']}"), 404)
    finally:
        again.stop()
