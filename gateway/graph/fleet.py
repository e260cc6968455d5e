"""A fleet primary's function graph: its own snapshot joined with the robots' (pure).

A robot's apps run on the robot's ROS graph, which only the robot's gateway sees: its own
snapshot of the function holds their nodes, topics and edges. The primary takes those with the
apps' fleet ids, renumbers topics and edges after its own, and recomputes the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

STATUS_RANK = {"healthy": 0, "degraded": 1, "broken": 2}


def merge(local: dict[str, Any], peers: Sequence[tuple[str, dict[str, Any]]],
          rename: Callable[[str, str], str]) -> dict[str, Any]:
    """The local graph document with each peer's (peer name, document) joined in."""
    if not peers:
        return local
    out = dict(local)
    nodes = {n["entity_id"]: n for n in local.get("nodes", [])}
    topics = [dict(t) for t in local.get("topics", [])]
    topic_id = {t["name"]: t["topic_id"] for t in topics}
    edges = [dict(e) for e in local.get("edges", [])]
    status = local.get("pipeline_status", "healthy")
    bottleneck = local.get("bottleneck_edge")
    for peer, doc in peers:
        for node in doc.get("nodes") or []:
            if isinstance(node, dict) and isinstance(node.get("entity_id"), str):
                # the robot sees its app's node: its reachability wins over the relayed flag
                fleet_id = rename(peer, node["entity_id"])
                nodes[fleet_id] = {**node, "entity_id": fleet_id}
        names = {t.get("topic_id"): t.get("name") for t in doc.get("topics") or []
                 if isinstance(t, dict)}
        for name in names.values():
            if isinstance(name, str) and name not in topic_id:
                topic_id[name] = f"topic-{len(topic_id) + 1}"
                topics.append({"topic_id": topic_id[name], "name": name})
        for edge in doc.get("edges") or []:
            if not isinstance(edge, dict) or names.get(edge.get("topic_id")) not in topic_id:
                continue
            new_id = f"edge-{len(edges) + 1}"
            if doc.get("bottleneck_edge") == edge.get("edge_id") and bottleneck is None:
                bottleneck = new_id
            edges.append({**edge, "edge_id": new_id,
                          "source": rename(peer, str(edge.get("source"))),
                          "target": rename(peer, str(edge.get("target"))),
                          "topic_id": topic_id[str(names[edge.get("topic_id")])]})
        peer_status = doc.get("pipeline_status")
        if STATUS_RANK.get(str(peer_status), -1) > STATUS_RANK.get(str(status), 0):
            status = peer_status
    if status == "healthy" and any(n.get("node_status") == "unreachable"
                                   for n in nodes.values()):
        status = "degraded"
    out.update(nodes=[nodes[k] for k in sorted(nodes)], topics=topics, edges=edges,
               pipeline_status=status,
               bottleneck_edge=bottleneck if status == "degraded" else None)
    return out
