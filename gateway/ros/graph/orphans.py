"""Rebuild what a node offers from the endpoints on the graph, by the GUIDs its participant
announced (for nodes the rmw cannot name; see ros/graph/discovery_info.py).

DDS topic names carry the ROS kind: `rt/<topic>` for topics, `rq/<service>Request` (the
server's reader) and `rr/<service>Reply` (its writer) for services; an action server is the
server of `<action>/_action/send_goal`.

The same GUIDs tell whether DDS rediscovered all of a returned participant's endpoints
(`missing_endpoints`): after a resume it may bring back its writers but not its readers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .discovery_info import PREFIX_BYTES
from .discovery_layout import GUID_BYTES, NodeEntities, ParticipantEntities
from .snapshot import NodeInfo, ros_type

__all__ = ["missing_endpoints", "orphan_nodes", "ros_type"]

_SEND_GOAL = "/_action/send_goal"


def _action_type(service_type: str) -> str:
    """`pkg/action/Name` of an action's send_goal service type (`pkg/action/Name_SendGoal`)."""
    return service_type[: -len("_SendGoal")] if service_type.endswith("_SendGoal") \
        else service_type


def orphan_nodes(node: Any, wanted: Iterable[NodeEntities]) -> list[NodeInfo]:
    """NodeInfo of each wanted node, from the graph queried through `node` (blocking)."""
    owners: dict[bytes, int] = {}
    entries = list(wanted)
    for i, entry in enumerate(entries):
        for guid in entry.readers | entry.writers:
            owners[guid] = i
    pubs: list[set[tuple[str, str]]] = [set() for _ in entries]
    subs: list[set[tuple[str, str]]] = [set() for _ in entries]
    srvs: list[set[tuple[str, str]]] = [set() for _ in entries]

    def owned(infos: list[Any]) -> list[tuple[int, str]]:
        out = []
        for info in infos:
            i = owners.get(bytes(info.endpoint_gid[:GUID_BYTES]))
            if i is not None:
                out.append((i, ros_type(info.topic_type)))
        return out

    for dds_name, _types in node.get_topic_names_and_types(no_demangle=True):
        if dds_name.startswith("rt/"):
            name = dds_name[2:]
            for i, t in owned(node.get_publishers_info_by_topic(dds_name, no_mangle=True)):
                pubs[i].add((name, t))
            for i, t in owned(node.get_subscriptions_info_by_topic(dds_name, no_mangle=True)):
                subs[i].add((name, t))
        elif dds_name.startswith("rq/") and dds_name.endswith("Request"):
            name = dds_name[2:-len("Request")]
            for i, t in owned(node.get_subscriptions_info_by_topic(dds_name, no_mangle=True)):
                srvs[i].add((name, t))
    out = []
    for i, entry in enumerate(entries):
        actions = tuple(sorted((n[: -len(_SEND_GOAL)], _action_type(t))
                               for n, t in srvs[i] if n.endswith(_SEND_GOAL)))
        out.append(NodeInfo(name=entry.name, namespace=entry.namespace,
                            publishers=tuple(sorted(pubs[i])), subscribers=tuple(sorted(subs[i])),
                            services=tuple(sorted(srvs[i])), actions=actions))
    return out


def graph_guids(node: Any) -> set[bytes]:
    """GUIDs of every endpoint on the graph, queried through `node` (blocking)."""
    found: set[bytes] = set()
    for dds_name, _types in node.get_topic_names_and_types(no_demangle=True):
        for infos in (node.get_publishers_info_by_topic(dds_name, no_mangle=True),
                      node.get_subscriptions_info_by_topic(dds_name, no_mangle=True)):
            found.update(bytes(i.endpoint_gid[:GUID_BYTES]) for i in infos)
    return found


def missing_endpoints(node: Any, participants: Iterable[ParticipantEntities]
                      ) -> dict[bytes, tuple[int, int]]:
    """Per participant (GUID prefix): the readers and writers its nodes announced that are not
    on the graph; participants with nothing missing are left out (blocking)."""
    wanted = list(participants)
    if not wanted:
        return {}
    found = graph_guids(node)
    out = {}
    for p in wanted:
        readers = sum(1 for n in p.nodes for g in n.readers if g not in found)
        writers = sum(1 for n in p.nodes for g in n.writers if g not in found)
        if readers or writers:
            out[p.guid[:PREFIX_BYTES]] = (readers, writers)
    return out
