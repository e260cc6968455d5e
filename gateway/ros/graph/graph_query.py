"""Query the ROS graph into a GraphSnapshot (blocking: call from a worker thread)."""

from __future__ import annotations

import logging
from typing import Any

from .discovery_info import DISCOVERY_TOPIC, PREFIX_BYTES, DiscoveryInfo, tracker_of
from .orphans import orphan_nodes
from .snapshot import GraphSnapshot, NodeInfo, TopicInfo, _pairs

log = logging.getLogger(__name__)


def _action_servers(node: Any, name: str, ns: str) -> Any:
    """rclpy.action.graph's query, without importing rclpy.action (clients, servers, msgs)."""
    with node.handle:
        return node.handle.get_action_server_names_and_types_by_node(name, ns)


def take_snapshot(node: Any, own_topics: frozenset[str] = frozenset()) -> GraphSnapshot:
    """Query the graph through `node` (blocking; call from a worker thread)."""
    tracker = tracker_of(node)
    alive: set[bytes] = set()
    if tracker is not None:
        writers = node.get_publishers_info_by_topic(DISCOVERY_TOPIC, no_mangle=True)
        alive = {bytes(w.endpoint_gid[:PREFIX_BYTES]) for w in writers}
        tracker.refresh(alive)
    announced = tracker.announced(alive) if tracker is not None else None
    nodes = []
    seen = set()
    stale = []
    for name, ns in node.get_node_names_and_namespaces():
        if name.startswith("_") or (name, ns) in seen:
            continue
        seen.add((name, ns))
        try:
            info = NodeInfo(
                name=name,
                namespace=ns,
                publishers=_pairs(node.get_publisher_names_and_types_by_node(name, ns)),
                subscribers=_pairs(node.get_subscriber_names_and_types_by_node(name, ns)),
                services=_pairs(node.get_service_names_and_types_by_node(name, ns)),
                actions=_pairs(_action_servers(node, name, ns)),
            )
        except Exception:  # node left between the two queries
            log.debug("node %s%s vanished during the graph poll", ns, name)
            continue
        if announced is not None and (name, ns) not in announced and not (
                info.publishers or info.subscribers or info.services or info.actions):
            # The rmw names it from a node list whose participant is gone: a list taken after
            # the participant left re-adds it to the rmw's graph (a lease lost while the
            # machine was loaded, or a forged sample), and nothing removes it again.
            seen.discard((name, ns))
            stale.append(info.fqn)
            continue
        nodes.append(info)
    if tracker is not None:
        tracker.stale_nodes(stale)
    topics = {}
    for tname, types in node.get_topic_names_and_types():
        pubs = node.count_publishers(tname)
        subs = node.count_subscribers(tname) - (1 if tname in own_topics else 0)
        topics[tname] = TopicInfo(tname, types[0] if types else "", pubs, max(subs, 0))
    if tracker is not None:
        nodes.extend(_orphans(node, tracker, alive, seen, tuple(topics.values())))
    nodes.sort(key=lambda n: (n.namespace, n.name))
    return GraphSnapshot(tuple(nodes), topics)


def _orphans(node: Any, tracker: DiscoveryInfo, alive: set[bytes], listed: set[tuple[str, str]],
             counts: Any) -> list[NodeInfo]:
    """Nodes the rmw cannot name (Humble participants, participants back from a lost lease),
    from the gateway's own reading of ros_discovery_info (discovery_info.py); then one node per
    participant without a node list (nameless.py)."""
    kept = tracker.participants(alive)
    missing = [n for p in kept for n in p.nodes
               if (n.name, n.namespace) not in listed and not n.name.startswith("_")]
    found = orphan_nodes(node, missing) if missing else []
    if found:
        log.debug("%d node(s) named from ros_discovery_info samples", len(found))
    claimed = frozenset(g for p in kept for n in p.nodes for g in n.readers | n.writers)
    named = listed | {(n.name, n.namespace) for n in found}
    return found + tracker.nameless.nodes(node, counts, claimed, named)
