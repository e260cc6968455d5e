"""Function graph snapshot and watchdog detectors (pure logic, explicit now)."""

from __future__ import annotations

import pytest

from gateway.graph import model
from gateway.graph import watchdog as wd
from gateway.graph.model import AppView, GraphConfig, TopicMetrics
from gateway.graph.watchdog import Arming, Endpoint, Grace

S = 1_000_000_000
NOW = 1_800_000_000 * S
CFG = GraphConfig()


def apps() -> list[AppView]:
    return [AppView("cam", "/p/cam", True, NOW, publishes=("/p/image", "/rosout")),
            AppView("det", "/p/det", True, NOW, publishes=("/p/objects",),
                    subscribes=("/p/image", "/parameter_events")),
            AppView("trk", "/p/trk", True, NOW, subscribes=("/p/objects",))]


def test_topics_edges_and_pending() -> None:
    doc = model.snapshot("p", apps(), {}, {"/p/image": 1}, CFG, NOW)["x-vendor-graph"]
    assert [t["name"] for t in doc["topics"]] == ["/p/image", "/p/objects"]
    assert [(e["edge_id"], e["source"], e["target"], e["topic_id"]) for e in doc["edges"]] == [
        ("edge-1", "cam", "det", "topic-1"), ("edge-2", "det", "trk", "topic-2")]
    m = doc["edges"][0]["metrics"]
    assert m == {"publisher_count": 1, "frequency_hz": None, "latency_ms": None,
                 "drop_rate_percent": 0.0, "metrics_status": "pending"}
    assert doc["pipeline_status"] == "healthy" and doc["bottleneck_edge"] is None
    assert doc["timestamp"].endswith("Z") and doc["graph_id"] == "p-graph"


def test_stale_edge_breaks_the_pipeline() -> None:
    fresh = TopicMetrics(NOW - S, 10.0, 3.0, 0.0, 10.0, "/p/cam")
    stale = TopicMetrics(NOW - 8 * S, 10.0, None, 0.0, 10.0)  # window 5 s + grace 2 s
    doc = model.snapshot("p", apps(), {"/p/image": fresh, "/p/objects": stale}, {}, CFG,
                         NOW)["x-vendor-graph"]
    first, second = doc["edges"]
    assert first["metrics"]["metrics_status"] == "active" and first["metrics"]["source"] == "/p/cam"
    assert second["metrics"]["metrics_status"] == "error"
    assert second["metrics"]["error_reason"] == "metrics_stale"
    assert doc["pipeline_status"] == "broken"


def test_degraded_rate_names_the_bottleneck() -> None:
    slow = TopicMetrics(NOW, 2.0, None, 0.0, 10.0)
    ok = TopicMetrics(NOW, 9.0, None, 0.0, 10.0)
    doc = model.snapshot("p", apps(), {"/p/image": ok, "/p/objects": slow}, {}, CFG,
                         NOW)["x-vendor-graph"]
    assert doc["pipeline_status"] == "degraded" and doc["bottleneck_edge"] == "edge-2"
    dropping = TopicMetrics(NOW, 10.0, None, 12.0, 10.0)
    doc = model.snapshot("p", apps(), {"/p/image": dropping}, {}, CFG, NOW)["x-vendor-graph"]
    assert doc["pipeline_status"] == "degraded"


def test_unreachable_node_degrades_and_multi_publisher_annotates() -> None:
    gone = [*apps()[:2], AppView("trk", "/p/trk", False, NOW - 5 * S,
                                 subscribes=("/p/objects",))]
    doc = model.snapshot("p", gone, {}, {"/p/image": 2}, CFG, NOW)["x-vendor-graph"]
    node = next(n for n in doc["nodes"] if n["entity_id"] == "trk")
    assert node["node_status"] == "unreachable" and "last_seen" in node
    assert doc["pipeline_status"] == "degraded"
    assert doc["edges"][0]["metrics"]["rate_ambiguous"] is True
    cfg = GraphConfig(multi_publisher_rate="suppress")
    m = TopicMetrics(NOW, 10.0, None, 0.0, 10.0)
    body, _, _ = model.edge_metrics(cfg, m, 2, NOW)
    assert body["frequency_hz"] is None


def test_rate_window_and_config() -> None:
    times = [NOW - int(i * 0.2 * S) for i in range(10, -1, -1)]
    assert model.rate_hz(times, NOW, 5.0) == pytest.approx(5.0)
    assert model.rate_hz(times[-1:], NOW, 5.0) is None
    assert model.window_sec(CFG, 0.1) == 30.0 and model.window_sec(CFG, None) == 5.0
    assert GraphConfig.from_config({"stale_grace_sec": "3"}).stale_grace_sec == 3.0
    with pytest.raises(ValueError):
        GraphConfig.from_config({"multi_publisher_rate": "average"})
    assert not model.is_graph_topic("/cam/nitros/image")
    assert not model.is_graph_topic("/cam/image_supported_types")


def test_diagnostics_status_to_metrics() -> None:
    status = {"name": "/p/image", "values": [
        {"key": "frame_rate_msg", "value": "0"}, {"key": "frame_rate_node", "value": "14.5"},
        {"key": "current_delay_from_realtime_ms", "value": "12"},
        {"key": "drop_rate", "value": "1.5"}, {"key": "expected_frequency", "value": "15"}]}
    m = model.diagnostics_metrics(status, NOW, None)
    assert (m.frequency_hz, m.latency_ms, m.drop_rate_percent, m.expected_hz) == (
        14.5, 12.0, 1.5, 15.0)


def test_qos_rules() -> None:
    rel, be = Endpoint("/a"), Endpoint("/b", reliability="best_effort")
    assert wd.qos_incompatibility(be, rel) is not None
    assert wd.qos_incompatibility(rel, be) is None
    latched = Endpoint("/s", durability="transient_local")
    assert "TRANSIENT_LOCAL" in (wd.qos_incompatibility(rel, latched) or "")
    assert wd.qos_incompatibility(rel, Endpoint("/s", liveliness="manual_by_topic"))
    assert wd.qos_incompatibility(Endpoint("/p", deadline_ns=2 * S),
                                  Endpoint("/s", deadline_ns=S))
    assert wd.qos_incompatibility(Endpoint("/p"), Endpoint("/s", deadline_ns=S))
    assert wd.qos_incompatibility(Endpoint("/p", deadline_ns=S // 2),
                                  Endpoint("/s", deadline_ns=S)) is None
    found = wd.qos_findings({"/t": ([rel, be], [Endpoint("/sub")]),
                             "/u": ([be], [Endpoint("/sub2")]),
                             "/rosout": ([be], [Endpoint("/x")])})
    assert [(f.key, f.severity) for f in found] == [("/t|/sub", wd.WARN),
                                                    ("/u|/sub2", wd.ERROR)]
    assert wd.qos_findings({"/u": ([be], [Endpoint("/sub2")])}, allowlist=["/sub2"]) == []


def test_orphans() -> None:
    counts = {"/ns/cmd_vel": (1, 0), "/ns/cmd_vell": (0, 1), "/ns/cam1": (1, 0),
              "/ns/cam2": (0, 1), "/other/cmd_vel": (0, 1), "/ns/ok": (1, 1)}
    found = wd.orphan_findings(counts)
    assert [f.key for f in found] == ["/ns/cmd_vell|/ns/cmd_vel"]
    assert wd.levenshtein("kitten", "sitting", 5) == 3
    assert wd.levenshtein("a", "abcd", 1) == 2


def test_drift_and_lifecycle() -> None:
    base = {"/n": {"gain": 1.0, "name": "x", "debug.level": 1}}
    now = {"/n": {"gain": 2.0, "name": "x", "debug.level": 3}}
    found = wd.drift_findings(base, now, ignore=["debug.*"])
    assert [f.key for f in found] == ["/n|gain"]
    assert [f.key for f in wd.drift_findings(base, base, expect={"name": "y"})] == ["/n|name"]
    found = wd.lifecycle_findings({"/a": "inactive", "/b": "active", "/c": None, "/d": None},
                                  {"/c": 60, "/d": 60}, {"/c": True})
    assert [(f.code, f.node) for f in found] == [(wd.NODE_INACTIVE, "/a"),
                                                 (wd.NODE_UNREADABLE, "/c"),
                                                 (wd.NODE_NOT_MANAGED, "/d")]
    assert wd.lifecycle_findings({"/c": None}, {"/c": 3}, {}) == []


def test_arming_grace_and_aggregate() -> None:
    arm = Arming(warmup=2)
    arm.update(["a"])
    assert not arm.armed("a")
    arm.update(["a", "b"])
    assert arm.armed("a") and not arm.armed("b") and arm.first_seen["b"] == 2
    arm.update(["b"])
    assert not arm.armed("a") and "a" not in arm.first_seen  # absence resets
    grace = Grace(2)
    f = wd.Finding(wd.ORPHAN, "k", wd.ERROR, "m")
    assert grace.filter([f]) == [] and grace.filter([f]) == [f]
    assert grace.filter([]) == [] and grace.filter([f]) == []  # a gap restarts the count
    assert wd.aggregate(wd.ORPHAN, [f])[:2] == ("FAILED", wd.ERROR)
    assert wd.aggregate(wd.ORPHAN, [])[0] == "PASSED"
