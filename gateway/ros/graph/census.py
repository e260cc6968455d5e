"""Participant census: which DDS participants are discovered and whether their nodes are known.

Every ROS participant has one `ros_discovery_info` writer (its GUID prefix is the first 12 bytes
of the endpoint GID) and publishes there which nodes it holds; until that arrives the rmw names
the participant's endpoints `_NODE_NAME_UNKNOWN_`. Every ROS node publishes `/rosout`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .discovery_info import tracker_of

DISCOVERY_TOPIC = "ros_discovery_info"  # the rmw's own topic: a DDS name, not a ROS one
UNKNOWN_NODE = "_NODE_NAME_UNKNOWN_"
PREFIX_BYTES = 12
GUID_BYTES = 16


@dataclass(frozen=True)
class Census:
    """Participants discovered (GUID prefixes) and those with their nodes known."""

    participants: frozenset[bytes] = frozenset()
    with_nodes: frozenset[bytes] = frozenset()
    unnamed_endpoints: int = 0

    @property
    def complete(self) -> bool:
        """Every participant discovered has its nodes known (and no /rosout writer is unnamed)."""
        return self.unnamed_endpoints == 0 and self.participants <= self.with_nodes


def count(discovery_writers: list[Any], rosout_writers: list[Any],
          named_elsewhere: frozenset[bytes] = frozenset()) -> Census:
    """The census from the endpoint infos of both topics (rclpy TopicEndpointInfo-like);
    `named_elsewhere`: writer GUIDs whose node the gateway knows from its own reading of
    ros_discovery_info (ros/graph/discovery_info.py) though the rmw leaves them unnamed."""
    participants = frozenset(bytes(w.endpoint_gid[:PREFIX_BYTES]) for w in discovery_writers)
    named = [w for w in rosout_writers if w.node_name != UNKNOWN_NODE
             or bytes(w.endpoint_gid[:GUID_BYTES]) in named_elsewhere]
    return Census(participants, frozenset(bytes(w.endpoint_gid[:PREFIX_BYTES]) for w in named),
                  len(rosout_writers) - len(named))


def take_census(node: Any) -> Census:
    """Query the graph through `node` (blocking; call from a worker thread)."""
    discovery = node.get_publishers_info_by_topic(DISCOVERY_TOPIC, no_mangle=True)
    tracker = tracker_of(node)
    named = frozenset() if tracker is None else tracker.writer_guids(
        {bytes(w.endpoint_gid[:PREFIX_BYTES]) for w in discovery})
    found = count(discovery, node.get_publishers_info_by_topic("/rosout"), named)
    nameless = frozenset() if tracker is None else tracker.nameless.prefixes()
    if not nameless:
        return found
    # Participants without a node list (ros/graph/nameless.py) are discovered, and all there is to
    # know of them is known: they have an entity of their own.
    return Census(found.participants | nameless, found.with_nodes | nameless,
                  found.unnamed_endpoints)



def endpoint_gids(node: Any) -> frozenset[bytes]:
    """The GUIDs of every endpoint the graph shows through `node`, on every DDS topic (the
    services' request and reply topics too; blocking: call from a worker thread)."""
    gids: set[bytes] = set()
    for dds_name, _types in node.get_topic_names_and_types(no_demangle=True):
        for infos in (node.get_publishers_info_by_topic(dds_name, no_mangle=True),
                      node.get_subscriptions_info_by_topic(dds_name, no_mangle=True)):
            gids.update(bytes(i.endpoint_gid[:GUID_BYTES]) for i in infos)
    return frozenset(gids)


def missing(known: frozenset[bytes], seen: frozenset[bytes],
            participants: frozenset[bytes]) -> int:
    """How many endpoints of `known` that belong to one of `participants` `seen` lacks."""
    return sum(1 for gid in known if gid[:PREFIX_BYTES] in participants and gid not in seen)
