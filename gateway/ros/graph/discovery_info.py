"""The gateway's own reading of `ros_discovery_info`: nodes the rmw's graph cannot name.

The rmw names a participant's endpoints from the participant's `ros_discovery_info` sample.
Two cases leave them `_NODE_NAME_UNKNOWN_`, so the rmw lists no node:

- a Humble participant: its sample has 24-byte gids, which the rmw reads as "no nodes";
- a participant that came back after its DDS lease expired (a process stopped past the lease):
  the rmw dropped its sample with the participant, and the participant never sends it again
  (its writer still counts the gateway's reader as up to date).

Here a reader of our own keeps each participant's newest sample, in either layout, and keeps
it while the participant is away; a participant on the graph whose sample is missing gets a
fresh reader (a new reader receives every writer's kept sample). Nodes the rmw does not list
are then rebuilt from the endpoints on the graph (`orphan_nodes`).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..dds._rawtopic import RawTopicReader
from ..interfaces.interface_paths import active
from .discovery_layout import GUID_BYTES, LayoutError, ParticipantEntities, decode
from .nameless import Nameless

log = logging.getLogger(__name__)

DISCOVERY_TOPIC = "ros_discovery_info"
PREFIX_BYTES = 12
# A participant on the graph without a sample this long gets a fresh reader (at most this often).
RELEARN_AFTER_S = 1.0
RELEARN_EVERY_S = 5.0
# A participant's sample is kept this long after it left the graph (it may come back).
KEEP_AWAY_S = 3600.0
# A participant back on the graph is watched this long for endpoints DDS did not rediscover.
RETURN_WATCH_S = 30.0
MAX_PARTICIPANTS = 4096


@dataclass
class _Kept:
    info: ParticipantEntities
    seen: float  # monotonic: last time the participant was on the graph (or sent)


class DiscoveryInfo:
    """Newest ParticipantEntitiesInfo per participant, read by the gateway itself."""

    def __init__(self, node: Any, reader_factory: Any = None) -> None:
        self._node = node
        self._factory = reader_factory or _raw_reader
        self._reader: Any = None
        self._kept: dict[bytes, _Kept] = {}  # GUID prefix -> newest sample
        self._missing_since: dict[bytes, float] = {}
        self._relearned_at = 0.0
        self._lock = threading.Lock()
        self.samples = 0
        self.undecodable = 0
        self.relearns = 0
        self.humble_participants = 0
        self.returned = 0  # participants back on the graph after they had left it
        self._away: set[bytes] = set()
        self._back_at: dict[bytes, float] = {}  # GUID prefix -> when it came back (monotonic)
        self.nameless = Nameless()  # participants without any node list
        # nodes the rmw names though no participant on the graph announces them and they
        # have no endpoint (ros/graph/graph_query.py), at the last poll: fully qualified names
        self._stale: frozenset[str] = frozenset()
        self.stale_hidden = 0  # such nodes found, in all
        try:
            self._reader = self._factory(node)
        except Exception as exc:  # an rmw without the C API used: the rmw's view only
            log.warning("ros_discovery_info: no reader of our own (%s); nodes of Humble "
                        "participants and of participants back from a lost lease stay unnamed",
                        exc)

    def refresh(self, alive: set[bytes], now: float | None = None) -> None:
        """Take new samples; `alive`: GUID prefixes of the participants on the graph."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if self._reader is None:
                return
            for sample in self._reader.take():
                self._learn(sample, now)
            for prefix in alive:
                kept = self._kept.get(prefix)
                if kept is not None:
                    if prefix in self._away:
                        self._back(prefix, kept, now)
                    kept.seen = now
                    self._missing_since.pop(prefix, None)
                else:
                    self._missing_since.setdefault(prefix, now)
            for prefix in list(self._missing_since):
                if prefix not in alive:
                    del self._missing_since[prefix]
            stale = [p for p, since in self._missing_since.items()
                     if now - since >= RELEARN_AFTER_S]
            if stale and now - self._relearned_at >= RELEARN_EVERY_S:
                self._relearn(now)
            for prefix in [p for p, k in self._kept.items() if now - k.seen > KEEP_AWAY_S]:
                del self._kept[prefix]
            self._away = {p for p in self._kept if p not in alive}
            for prefix in [p for p, at in self._back_at.items()
                           if p not in alive or now - at > RETURN_WATCH_S]:
                del self._back_at[prefix]
            self.humble_participants = sum(
                1 for p, k in self._kept.items() if p in alive and k.info.gid_size != GUID_BYTES)

    def _back(self, prefix: bytes, kept: _Kept, now: float) -> None:
        """A participant left the graph (its DDS lease expired: stopped, stalled, cut off)
        and came back; the rmw no longer names its nodes, the kept sample does."""
        self.returned += 1
        self._back_at[prefix] = now
        log.warning("DDS participant %s is back after %.1f s off the graph (its lease had "
                    "expired while the process lived on): node(s) %s named from its kept "
                    "ros_discovery_info", prefix.hex(), now - kept.seen,
                    ", ".join(n.namespace.rstrip("/") + "/" + n.name for n in kept.info.nodes)
                    or "-")

    def _learn(self, sample: bytes, now: float) -> None:
        self.samples += 1
        try:
            info = decode(sample)
        except LayoutError as exc:
            self.undecodable += 1
            log.debug("ros_discovery_info: undecodable sample (%s)", exc)
            return
        prefix = info.guid[:PREFIX_BYTES]
        if prefix not in self._kept and len(self._kept) >= MAX_PARTICIPANTS:
            oldest = min(self._kept, key=lambda p: self._kept[p].seen)
            del self._kept[oldest]
        self._kept[prefix] = _Kept(info, now)

    def _relearn(self, now: float) -> None:
        """Replace the reader: writers send a new reader their kept sample."""
        self._relearned_at = now
        self.relearns += 1
        old, self._reader = self._reader, None
        try:
            self._reader = self._factory(self._node)
        except Exception as exc:
            log.warning("ros_discovery_info: cannot renew the reader: %s", exc)
            self._reader = old
            return
        for sample in old.take():
            self._learn(sample, now)
        old.close()
        log.info("ros_discovery_info: %d participant(s) on the graph without their node list; "
                 "reader renewed", len(self._missing_since))

    def announced(self, alive: Collection[bytes]) -> set[tuple[str, str]]:
        """(name, namespace) of every node in the kept samples of the participants on the
        graph."""
        with self._lock:
            return {(n.name, n.namespace) for p, k in self._kept.items() if p in alive
                    for n in k.info.nodes}

    def stale_nodes(self, fqns: Collection[str]) -> None:
        """The nodes of this poll that the rmw names from a participant no longer on the graph
        (left out of the listing): logged when first found, counted for /health."""
        with self._lock:
            for fqn in fqns:
                if fqn not in self._stale:
                    self.stale_hidden += 1
                    log.warning("node %s is named by the rmw's graph, but no participant on the "
                                "graph announces it and it has no endpoint: a node list that "
                                "arrived after its participant had left (or a forged one); "
                                "not listed", fqn)
            self._stale = frozenset(fqns)

    def participants(self, alive: set[bytes]) -> list[ParticipantEntities]:
        """Kept samples of the participants on the graph."""
        with self._lock:
            return [k.info for p, k in self._kept.items() if p in alive]

    def returned_recently(self, alive: Collection[bytes], now: float | None = None
                          ) -> list[ParticipantEntities]:
        """Kept samples of the participants on the graph that came back within RETURN_WATCH_S
        (their endpoints may be partly rediscovered: ros/graph/orphans.py missing_endpoints)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return [self._kept[p].info for p, at in self._back_at.items()
                    if p in alive and p in self._kept and now - at <= RETURN_WATCH_S]

    def writer_guids(self, alive: set[bytes]) -> frozenset[bytes]:
        """GUIDs of the writers of every node kept for the participants on the graph."""
        with self._lock:
            return frozenset(g for p, k in self._kept.items() if p in alive
                             for n in k.info.nodes for g in n.writers)

    def owner_of(self, guid: bytes) -> str | None:
        """The fully qualified name of the kept node that announced an endpoint GUID."""
        with self._lock:
            kept = self._kept.get(guid[:PREFIX_BYTES])
            for n in kept.info.nodes if kept is not None else ():
                if guid in n.readers or guid in n.writers:
                    return n.namespace.rstrip("/") + "/" + n.name
        return None

    def stats(self) -> dict[str, Any]:
        """Figures for /health."""
        with self._lock:
            return {"samples": self.samples, "undecodable": self.undecodable,
                    "reader_renewals": self.relearns, "kept": len(self._kept),
                    "participants_returned": self.returned,
                    "humble_participants": self.humble_participants,
                    "stale_nodes_hidden": self.stale_hidden,
                    "stale_nodes": sorted(self._stale)[:16],
                    "nameless_participants": self.nameless.stats()}

    def reopen(self) -> None:
        """A new reader after close(), on the node's current participant (a rejoin,
        ros/dds/bridge.py); the kept samples stay."""
        with self._lock:
            if self._reader is None:
                self._reader = self._factory(self._node)

    def close(self) -> None:
        """Destroy the reader."""
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None


def _raw_reader(node: Any) -> Any:
    from rmw_dds_common.msg import (  # noqa: PLC0415 - ROS types load on first use
        ParticipantEntitiesInfo,
    )

    return RawTopicReader(node, ParticipantEntitiesInfo, DISCOVERY_TOPIC)


_trackers: weakref.WeakKeyDictionary[Any, DiscoveryInfo] = weakref.WeakKeyDictionary()


def attach(node: Any) -> DiscoveryInfo:
    """The tracker of `node` (made on first use): graph polls through the node use it."""
    tracker = _trackers.get(node)
    if tracker is None:
        tracker = _trackers[node] = DiscoveryInfo(node)
    return tracker


def tracker_of(node: Any) -> DiscoveryInfo | None:
    """The node's tracker, if one was attached."""
    return _trackers.get(node)


def ros_types_health(bridge: Any) -> Any:
    """/health's block on types and nodes from elsewhere: `ros.interface_paths` and our own
    reading of ros_discovery_info (Humble participants, participants back from a lost lease)."""
    def block() -> dict[str, Any]:
        tracker = getattr(bridge, "discovery_info", None)
        return {"interface_paths": active().summary(),
                "discovery_info": tracker.stats() if tracker is not None else None}

    return block
