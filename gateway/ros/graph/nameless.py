"""Participants without a node list: an entity of their own for their topics and services.

A DDS participant that sends no `ros_discovery_info` (a bare DDS program, a robot whose node
list does not reach the gateway) has endpoints no node owns: the rmw names their node
`_CREATED_BY_BARE_DDS_APP_` (or `_NODE_NAME_UNKNOWN_`) and lists no node for them, so they would
have no entity at all. Here such endpoints are grouped by their participant (GUID prefix) into
one node named after the participant: `dds_<vendor>_<GUID prefix>` (vendor from the RTPS vendor
id: `cyclone`, `fastdds`, `connext`, `opendds`, ... or its hex), namespace `/`. The name holds as
long as the participant lives (a restarted program is a new participant, a new name).

Endpoints claimed by a kept `ros_discovery_info` sample (ros/graph/discovery_info.py: Humble
participants, participants back from a lost lease) belong to those nodes instead. A participant
is shown only once its endpoints stayed unnamed for `GRACE_S` (a ROS participant's node list
arrives a little after its endpoints). The graph scan costs one endpoint query per DDS topic,
so it runs only when the DDS topic names or the endpoint counts changed, or while a participant
waits out its grace.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .discovery_layout import GUID_BYTES
from .snapshot import NodeInfo, ros_type

UNNAMED = frozenset({"_CREATED_BY_BARE_DDS_APP_", "_NODE_NAME_UNKNOWN_"})
PREFIX_BYTES = 12
GRACE_S = 2.0
MAX_PARTICIPANTS = 256  # nameless participants listed at most (the rest are counted)
VENDORS = {0x0101: "connext", 0x0102: "opendds_ocs", 0x0103: "opendds", 0x010F: "fastdds",
           0x0110: "cyclone", 0x0112: "rtiperf", 0x0113: "gurumdds", 0x0118: "zenoh"}
_SEND_GOAL = "/_action/send_goal"


def participant_name(prefix: bytes) -> str:
    """The entity name of a nameless participant (GUID prefix: 12 bytes)."""
    vendor = int.from_bytes(prefix[:2], "big")
    return f"dds_{VENDORS.get(vendor, f'{vendor:04x}')}_{prefix[2:].hex()}"


def vendor_of(guid: bytes) -> str:
    """The DDS vendor of an endpoint or participant GUID (`cyclone`, `fastdds`, ...)."""
    vendor = int.from_bytes(guid[:2], "big")
    return VENDORS.get(vendor, f"{vendor:04x}")


def endpoint_fqn(info: Any, owner_of: Callable[[bytes], str | None] | None = None) -> str:
    """The fully qualified name of the node owning an endpoint (rclpy TopicEndpointInfo): the
    rmw's name, else the node a kept ros_discovery_info sample names (`owner_of`, the tracker's
    method), else its nameless participant's entity (`/dds_<vendor>_<prefix>`)."""
    if info.node_name not in UNNAMED:
        ns = info.node_namespace
        return (ns.rstrip("/") if ns != "/" else "") + "/" + info.node_name
    gid = bytes(info.endpoint_gid[:GUID_BYTES])
    owner = owner_of(gid) if owner_of is not None else None
    return owner or "/" + participant_name(gid[:PREFIX_BYTES])


@dataclass
class _Found:
    publishers: set[tuple[str, str]] = field(default_factory=set)
    subscribers: set[tuple[str, str]] = field(default_factory=set)
    services: set[tuple[str, str]] = field(default_factory=set)


class Nameless:
    """The nameless participants on the graph, rescanned only when the graph moved."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s
        self._signature: Any = None
        self._first_seen: dict[bytes, float] = {}
        self._found: dict[bytes, _Found] = {}
        self._lock = threading.Lock()
        self.scans = 0
        self.dropped = 0  # participants beyond MAX_PARTICIPANTS, not listed

    def nodes(self, node: Any, counts: Any, claimed: frozenset[bytes],
              listed: set[tuple[str, str]], now: float | None = None) -> list[NodeInfo]:
        """NodeInfo of each nameless participant past its grace, by querying through `node`
        (blocking; the graph poll's worker thread). `counts`: the poll's endpoint counts of
        the ROS topics (any comparable value that changes when a participant joins a topic)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            topics = node.get_topic_names_and_types(no_demangle=True)
            signature = (tuple(name for name, _ in topics), claimed, counts)
            waiting = any(now - t < self.grace_s for t in self._first_seen.values())
            if signature != self._signature or waiting:
                self._signature = signature
                self._scan(node, topics, claimed)
            for prefix in list(self._first_seen):
                if prefix not in self._found:
                    del self._first_seen[prefix]
            for prefix in self._found:
                self._first_seen.setdefault(prefix, now)
            ready = sorted(p for p in self._found if now - self._first_seen[p] >= self.grace_s)
            self.dropped = max(0, len(ready) - MAX_PARTICIPANTS)
            out = []
            for prefix in ready[:MAX_PARTICIPANTS]:
                name = participant_name(prefix)
                if (name, "/") in listed:
                    continue
                out.append(_node_info(name, self._found[prefix]))
            return out

    def _scan(self, node: Any, topics: Iterable[tuple[str, list[str]]],
              claimed: frozenset[bytes]) -> None:
        self.scans += 1
        found: dict[bytes, _Found] = {}

        def unnamed(infos: list[Any]) -> Iterable[tuple[bytes, str]]:
            for info in infos:
                if info.node_name not in UNNAMED:
                    continue
                gid = bytes(info.endpoint_gid[:GUID_BYTES])
                if gid not in claimed:
                    yield gid[:PREFIX_BYTES], ros_type(info.topic_type)

        for dds_name, _types in topics:
            if dds_name.startswith("rt/"):
                name = dds_name[2:]
                for prefix, t in unnamed(node.get_publishers_info_by_topic(dds_name,
                                                                           no_mangle=True)):
                    found.setdefault(prefix, _Found()).publishers.add((name, t))
                for prefix, t in unnamed(node.get_subscriptions_info_by_topic(dds_name,
                                                                              no_mangle=True)):
                    found.setdefault(prefix, _Found()).subscribers.add((name, t))
            elif dds_name.startswith("rq/") and dds_name.endswith("Request"):
                name = dds_name[2:-len("Request")]
                for prefix, t in unnamed(node.get_subscriptions_info_by_topic(dds_name,
                                                                              no_mangle=True)):
                    found.setdefault(prefix, _Found()).services.add((name, t))
        self._found = found

    def prefixes(self) -> frozenset[bytes]:
        """GUID prefixes of the nameless participants found by the last scan (any age)."""
        with self._lock:
            return frozenset(self._found)

    def stats(self) -> dict[str, int]:
        """Figures for /health."""
        with self._lock:
            return {"participants": len(self._found), "scans": self.scans,
                    "not_listed": self.dropped}


def _node_info(name: str, found: _Found) -> NodeInfo:
    actions = tuple(sorted((n[: -len(_SEND_GOAL)], t[: -len("_SendGoal")]
                            if t.endswith("_SendGoal") else t)
                           for n, t in found.services if n.endswith(_SEND_GOAL)))
    return NodeInfo(name=name, namespace="/", publishers=tuple(sorted(found.publishers)),
                    subscribers=tuple(sorted(found.subscribers)),
                    services=tuple(sorted(found.services)), actions=actions)
