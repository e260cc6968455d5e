"""A ROS domain without nodes after readiness: most often the wrong ROS_DOMAIN_ID.

Logged once (a warning naming the domain in use and how to change it) and listed in the
/health `warnings` while the graph stays empty.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

CODE = "no_ros_nodes"


def domain_source(configured: int, environ: Mapping[str, str]) -> str:
    """Where the domain id in use comes from (`configured` is the setting ros.domain_id)."""
    if configured >= 0:
        return "set by --domain / the setting ros.domain_id"
    value = environ.get("ROS_DOMAIN_ID", "").strip()
    if value:
        return f"from ROS_DOMAIN_ID={value}"
    return "the default: ROS_DOMAIN_ID is not set"


def empty_message(domain_id: int, source: str) -> str:
    """The warning: the domain in use, where it came from, and what to change."""
    return (f"no ROS nodes seen in ROS domain {domain_id} ({source}); if the robot's nodes "
            "run in another domain, start the gateway with that ROS_DOMAIN_ID or "
            "--domain N (setting ros.domain_id); also check ROS_AUTOMATIC_DISCOVERY_RANGE "
            "matches the nodes'")


class EmptyDomain:
    """Counts the nodes of each graph snapshot; warns once when the ready graph is empty."""

    def __init__(self, domain_id: int, source: str, aggregating: bool = False) -> None:
        self.message = empty_message(domain_id, source)
        # A fleet primary (aggregation.enabled) serves its peers' nodes: none of its own is
        # normal there, so it is not warned about.
        self.aggregating = aggregating
        self.nodes: int | None = None  # None until the first snapshot
        self.ready = False
        self.warned = False

    def graph(self, snapshot: Any) -> None:
        """Each new graph snapshot (the bus's GRAPH events)."""
        self.nodes = len(snapshot.nodes)

    def on_ready(self) -> str | None:
        """At readiness: the message to log when no node is seen (once per process)."""
        self.ready = True
        if self.nodes or self.warned or self.aggregating:
            return None
        self.warned = True
        return self.message

    async def run(self, ready: asyncio.Event) -> None:
        """Waits for readiness, then logs the warning if the graph is empty."""
        await ready.wait()
        message = self.on_ready()
        if message is not None:
            log.warning("%s", message)

    def warnings(self) -> list[dict[str, Any]]:
        """The /health `warnings` item while the ready graph has no node."""
        if not self.ready or self.nodes or self.aggregating:
            return []
        return [{"code": CODE, "message": self.message, "entity_ids": [], "ros_node_fqns": [],
                 "peer_names": []}]
