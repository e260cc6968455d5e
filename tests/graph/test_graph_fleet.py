"""Joining a robot's function graph into the primary's (gateway/graph/fleet.py)."""

from __future__ import annotations

from typing import Any

from gateway.graph.fleet import merge

LOCAL: dict[str, Any] = {
    "graph_id": "f-graph", "pipeline_status": "healthy", "bottleneck_edge": None,
    "topics": [{"topic_id": "topic-1", "name": "/a"}],
    "nodes": [{"entity_id": "p1", "node_status": "reachable"},
              {"entity_id": "lidar", "node_status": "reachable"}],
    "edges": [{"edge_id": "edge-1", "source": "p1", "target": "p1", "topic_id": "topic-1",
               "metrics": {"metrics_status": "pending"}}],
}
PEER: dict[str, Any] = {
    "pipeline_status": "degraded", "bottleneck_edge": "edge-1",
    "topics": [{"topic_id": "topic-1", "name": "/b"}, {"topic_id": "topic-2", "name": "/a"}],
    "nodes": [{"entity_id": "lidar", "node_status": "unreachable", "last_seen": "T"},
              {"entity_id": "cam", "node_status": "reachable"}],
    "edges": [{"edge_id": "edge-1", "source": "cam", "target": "lidar", "topic_id": "topic-1",
               "metrics": {"metrics_status": "active"}},
              {"edge_id": "edge-2", "source": "cam", "target": "cam", "topic_id": "topic-2",
               "metrics": {"metrics_status": "active"}}],
}


def rename(peer: str, app_id: str) -> str:
    return f"{peer}__{app_id}" if app_id == "cam" else app_id


def test_a_peer_graph_joins_with_fleet_ids_and_renumbered_ids() -> None:
    out = merge(LOCAL, [("r2", PEER)], rename)
    assert out["topics"] == [{"topic_id": "topic-1", "name": "/a"},
                             {"topic_id": "topic-2", "name": "/b"}]
    assert [(e["edge_id"], e["source"], e["target"], e["topic_id"]) for e in out["edges"]] == [
        ("edge-1", "p1", "p1", "topic-1"), ("edge-2", "r2__cam", "lidar", "topic-2"),
        ("edge-3", "r2__cam", "r2__cam", "topic-1")]
    # the robot's view of its own app wins; nodes sorted by id
    assert out["nodes"] == [{"entity_id": "lidar", "node_status": "unreachable", "last_seen": "T"},
                            {"entity_id": "p1", "node_status": "reachable"},
                            {"entity_id": "r2__cam", "node_status": "reachable"}]
    assert out["pipeline_status"] == "degraded" and out["bottleneck_edge"] == "edge-2"
    assert LOCAL["edges"][0]["edge_id"] == "edge-1" and len(LOCAL["edges"]) == 1  # not modified


def test_a_broken_peer_breaks_the_join_and_junk_is_skipped() -> None:
    peer = {**PEER, "pipeline_status": "broken", "edges": [*PEER["edges"], "junk",
                                                           {"topic_id": "topic-9"}]}
    out = merge(LOCAL, [("r2", peer)], rename)
    assert out["pipeline_status"] == "broken" and out["bottleneck_edge"] is None
    assert len(out["edges"]) == 3


def test_no_peer_leaves_the_local_graph() -> None:
    assert merge(LOCAL, [], rename) == LOCAL
