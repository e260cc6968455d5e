"""The fault stream and correlation against a real gateway and real reporting nodes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.integration.test_faults_support import (
    RosSide,
    SseReader,
    faults_by_code,
    wait_until,
    write_yaml,
)

pytestmark = pytest.mark.integration

NS = "/stream_test"
RULES = """
correlation:
  enabled: true
  default_window_ms: 500
  patterns:
    motor: ["MOTOR_*"]
    comm: ["COMM_*"]
  rules:
    - id: estop_cascade
      name: E-stop cascade
      mode: hierarchical
      root_cause: {codes: ["ESTOP*"]}
      symptoms: [{pattern: motor}]
      window_ms: 10000
    - id: comm_storm
      name: Comm storm
      mode: auto_cluster
      match: [{pattern: comm}]
      min_count: 3
      window_ms: 10000
      representative: highest_severity
"""


@pytest.fixture(scope="module")
def gw(domain: int, ros: RosSide, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("stream")
    settings = [f"state_dir={tmp / 'state'}", "sse.max_clients=2", "sse.keepalive_sec=0.3",
                f"correlation.config_file={write_yaml(tmp / 'rules.yaml', RULES)}",
                "discovery.refresh_debounce_ms=100", "snapshots.enabled=false"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        yield g


def reporter_for(gw: Gateway, ros: RosSide, name: str):  # type: ignore[no-untyped-def]
    node = ros.node(name, NS)
    wait_until(lambda: gw.get(f"/apps/{name}").status == 200, 20, f"app {name}")
    return ros.reporter(node)


def code_is(code: str):  # type: ignore[no-untyped-def]
    return lambda e: e["data"]["fault"]["fault_code"] == code


def test_root_cause_mutes_symptoms_and_clears_them(gw: Gateway, ros: RosSide) -> None:
    rep = reporter_for(gw, ros, "charlie")
    sse = SseReader(gw)
    try:
        rep.report("ESTOP_C", 3, "emergency stop")
        sse.next(code_is("ESTOP_C"))
        rep.report("MOTOR_LEFT", 2, "motor stalled")
        # stored (the entity's own list shows it) but muted on the global list
        wait_until(lambda: "MOTOR_LEFT" in faults_by_code(gw, "/apps/charlie/faults"), 15,
                   "symptom stored")
        body = gw.get("/faults").json()
        codes = {i["fault_code"] for i in body["items"]}
        assert "ESTOP_C" in codes and "MOTOR_LEFT" not in codes
        assert body["muted_count"] == 1 and body["cluster_count"] == 0
        assert "muted_faults" not in body and "clusters" not in body
        muted = gw.get("/faults?include_muted=true").json()["muted_faults"]
        assert muted == [{"fault_code": "MOTOR_LEFT", "root_cause_code": "ESTOP_C",
                          "rule_id": "estop_cascade", "delay_ms": muted[0]["delay_ms"]}]
        assert muted[0]["delay_ms"] >= 0
        assert "MOTOR_LEFT" not in faults_by_code(gw, query="?status=all")
        detail = gw.get("/apps/charlie/faults/MOTOR_LEFT").json()
        assert detail["x-vendor"]["correlation"] == {
            "muted": True, "root_cause_code": "ESTOP_C", "rule_id": "estop_cascade"}
        assert gw.request("DELETE", "/apps/charlie/faults/ESTOP_C").status == 204
        cleared = sse.next(lambda e: e["event"] == "fault_cleared")
        assert cleared["data"]["fault"]["fault_code"] == "ESTOP_C"
        assert cleared["data"]["auto_cleared_codes"] == ["MOTOR_LEFT"]
        everything = faults_by_code(gw, query="?status=all")
        assert everything["MOTOR_LEFT"]["x-vendor"]["status"] == "CLEARED"
        assert gw.get("/faults").json()["muted_count"] == 0
        # the muted symptom was never published
        assert not [e for e in sse.drain() if code_is("MOTOR_LEFT")(e)]
    finally:
        sse.close()


def test_entity_clear_does_not_cascade_outside_the_entity(gw: Gateway, ros: RosSide) -> None:
    root = reporter_for(gw, ros, "delta")
    other = reporter_for(gw, ros, "echo")
    root.report("ESTOP_D", 3, "emergency stop")
    wait_until(lambda: "ESTOP_D" in faults_by_code(gw), 15, "root")
    other.report("MOTOR_RIGHT", 2, "motor stalled")
    wait_until(lambda: gw.get("/faults").json()["muted_count"] == 1, 15, "muted symptom")
    assert gw.request("DELETE", "/apps/delta/faults/ESTOP_D").status == 204
    active = faults_by_code(gw)
    assert active["MOTOR_RIGHT"]["x-vendor"]["status"] == "CONFIRMED"  # shown again
    assert gw.get("/faults").json()["muted_count"] == 0


def test_burst_shows_as_cluster_representative(gw: Gateway, ros: RosSide) -> None:
    rep = reporter_for(gw, ros, "foxtrot")
    rep.report("COMM_A", 1, "timeout")
    rep.report("COMM_B", 2, "bus off")
    rep.report("COMM_C", 1, "timeout")
    wait_until(lambda: gw.get("/faults").json()["cluster_count"] == 1, 15, "cluster")
    codes = set(faults_by_code(gw))
    assert "COMM_B" in codes and not {"COMM_A", "COMM_C"} & codes
    (cluster,) = gw.get("/faults?include_clusters=true").json()["clusters"]
    assert cluster["rule_id"] == "comm_storm" and cluster["rule_name"] == "Comm storm"
    assert cluster["representative_code"] == "COMM_B"
    assert cluster["representative_severity"] == 2
    assert cluster["fault_codes"] == ["COMM_A", "COMM_B", "COMM_C"]
    assert cluster["first_at"] <= cluster["last_at"]
    # the global clear takes everything, clusters included
    assert gw.request("DELETE", "/faults").status == 204
    body = gw.get("/faults").json()
    assert body["items"] == [] and body["cluster_count"] == 0
    assert_error(gw.get("/faults?status=nope"), 400, "invalid-parameter")


def test_a_report_burst_reaches_every_client_complete_and_in_order(gw: Gateway,
                                                                   ros: RosSide) -> None:
    # More reports than one flush applies and than one fan-out step serves: every event
    # still reaches both clients once, numbered without gaps, in the same order.
    node = ros.node("storm", NS)
    wait_until(lambda: gw.get("/apps/storm").status == 200, 20, "app storm")
    rep = ros.reporter(node, max_pending=10_000)
    codes, reports = 25, 1200
    readers = [SseReader(gw), SseReader(gw)]
    try:
        assert all(r.status == 200 for r in readers)
        for i in range(reports):  # a new message each time: every report is an event
            rep.report(f"STORM_{i % codes}", 2, f"m{i}")
        wait_until(lambda: rep.pending == 0, 90, "every report acknowledged")
        health = gw.get("/health")
        assert health.status == 200
        # the startup heap is out of the collector's full collections (gateway/process/gcpolicy.py)
        assert health.json()["x-vendor-gc"]["frozen_objects"] > 0
        # what the list says now (a report lost in transport and resent may land late)
        last = {code: item["message"] for code, item in faults_by_code(gw).items()
                if code.startswith("STORM_")}
        assert len(last) == codes
        for sse in readers:
            got = [sse.next(lambda e: e["data"]["fault"]["fault_code"].startswith("STORM_"),
                            timeout=60) for _ in range(reports)]
            ids = [e["id"] for e in got]
            assert ids == list(range(ids[0], ids[0] + reports))
            assert sum(e["event"] == "fault_confirmed" for e in got) == codes
            final = {e["data"]["fault"]["fault_code"]: e["data"]["fault"]["message"]
                     for e in got}
            assert final == last
        assert readers[0].events.empty() or all(
            not e["data"]["fault"]["fault_code"].startswith("STORM_")
            for e in list(readers[0].events.queue))
    finally:
        for r in readers:
            r.close()
        assert gw.request("DELETE", "/faults").status == 204


def test_open_stream_does_not_hold_up_shutdown(gw: Gateway) -> None:
    import signal

    sse = SseReader(gw)
    assert sse.status == 200
    assert gw.proc is not None
    gw.proc.send_signal(signal.SIGINT)
    gw.proc.wait(20)
    assert gw.proc.returncode == 0  # a clean exit, not a kill after a grace period
    sse._thread.join(5)
    assert not sse._thread.is_alive()  # the server ended the stream
    sse.close()
