"""Which services discovery queues for a type build (gateway/ros/calls/callbuild.py `prefetch`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gateway.ros.calls.callbuild import EVENT_SUFFIX, ServiceTypeBuilds
from gateway.ros.graph.snapshot import GraphSnapshot, NodeInfo, TopicInfo


def _graph(services: dict[str, str], introspected: set[str]) -> GraphSnapshot:
    node = NodeInfo("maps", "/", services=tuple(sorted(services.items())))
    topics = {s + EVENT_SUFFIX: TopicInfo(s + EVENT_SUFFIX, t + "_Event", 1, 0)
              for s, t in services.items() if s in introspected}
    return GraphSnapshot((node,), topics)


def test_only_introspected_services_of_types_the_gateway_lacks(tmp_path: Path) -> None:
    async def run() -> tuple[list[str], list[str], list[str]]:
        builds = ServiceTypeBuilds(object(), str(tmp_path))
        services = {"/get_map": "nav_msgs/srv/GetMap",  # lacked, introspected: queued
                    "/load_map": "nav_msgs/srv/LoadMap",  # lacked, no service events
                    "/trigger": "std_srvs/srv/Trigger",  # the gateway's own
                    "/bad": "Not/A/type"}
        graph = _graph(services, {"/get_map", "/trigger", "/bad"})
        first = builds.prefetch(graph)
        again = builds.prefetch(graph)  # each type is looked at once
        later = builds.prefetch(_graph(services, set(services)))  # introspection turned on
        builds.close()
        return first, again, later

    first, again, later = asyncio.run(run())
    assert first == ["nav_msgs/srv/GetMap"]
    assert again == []
    assert later == ["nav_msgs/srv/LoadMap"]
