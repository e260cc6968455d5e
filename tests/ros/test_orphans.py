"""Nodes rebuilt from endpoints by the GUIDs their participant announced."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.ros.graph.discovery_layout import GUID_BYTES, NodeEntities, ParticipantEntities
from gateway.ros.graph.orphans import missing_endpoints, orphan_nodes

PREFIX = bytes(range(12))


def guid(n: int) -> bytes:
    return PREFIX + n.to_bytes(4, "big")


@dataclass
class Info:
    endpoint_gid: list[int]
    topic_type: str


@dataclass
class FakeGraph:
    """get_* answers of an rclpy node, by DDS topic name."""

    publishers: dict[str, list[Info]] = field(default_factory=dict)
    subscriptions: dict[str, list[Info]] = field(default_factory=dict)

    def get_topic_names_and_types(self, no_demangle: bool = False) -> list[tuple[str, list[str]]]:
        assert no_demangle
        names = sorted(set(self.publishers) | set(self.subscriptions))
        return [(n, []) for n in names]

    def get_publishers_info_by_topic(self, name: str, no_mangle: bool = False) -> list[Info]:
        assert no_mangle
        return self.publishers.get(name, [])

    def get_subscriptions_info_by_topic(self, name: str, no_mangle: bool = False) -> list[Info]:
        assert no_mangle
        return self.subscriptions.get(name, [])


def info(n: int, dds_type: str) -> Info:
    return Info(list(guid(n)), dds_type)


def test_topics_services_and_actions_of_each_node() -> None:
    graph = FakeGraph(
        publishers={"rt/chatter": [info(1, "std_msgs::msg::dds_::String_"),
                                   info(99, "std_msgs::msg::dds_::String_")],
                    "rr/pingReply": [info(4, "std_srvs::srv::dds_::Trigger_Response_")]},
        subscriptions={"rt/cmd": [info(2, "std_msgs::msg::dds_::Bool_")],
                       "rq/pingRequest": [info(3, "std_srvs::srv::dds_::Trigger_Request_")],
                       "rq/fib/_action/send_goalRequest": [
                           info(5, "test_msgs::action::dds_::Fibonacci_SendGoal_Request_")]})
    talker = NodeEntities("/robot", "talker", frozenset({guid(2), guid(3), guid(5)}),
                          frozenset({guid(1), guid(4)}))
    other = NodeEntities("/", "quiet", frozenset(), frozenset())
    a, b = orphan_nodes(graph, [talker, other])
    assert (a.namespace, a.name) == ("/robot", "talker")
    assert a.publishers == (("/chatter", "std_msgs/msg/String"),)
    assert a.subscribers == (("/cmd", "std_msgs/msg/Bool"),)
    assert a.services == (("/fib/_action/send_goal", "test_msgs/action/Fibonacci_SendGoal"),
                          ("/ping", "std_srvs/srv/Trigger"))
    assert a.actions == (("/fib", "test_msgs/action/Fibonacci"),)
    assert a.user_services() == (("/ping", "std_srvs/srv/Trigger"),)
    assert (b.name, b.publishers, b.services) == ("quiet", (), ())


def test_endpoints_a_participant_announced_and_dds_did_not_rediscover() -> None:
    # its writers back, the reader of its service not: one reader missing
    graph = FakeGraph(publishers={"rt/chatter": [info(1, "std_msgs::msg::dds_::String_")],
                                  "rr/resetReply": [info(4, "std_srvs::srv::dds_::Empty_")]},
                      subscriptions={"rt/cmd": [info(2, "std_msgs::msg::dds_::Bool_")]})
    talker = NodeEntities("/", "talker", frozenset({guid(2), guid(3)}),
                          frozenset({guid(1), guid(4)}))
    back = ParticipantEntities(PREFIX + bytes(GUID_BYTES - len(PREFIX)), (talker,), GUID_BYTES)
    assert missing_endpoints(graph, [back]) == {PREFIX: (1, 0)}
    graph.subscriptions["rq/resetRequest"] = [info(3, "std_srvs::srv::dds_::Empty_")]
    assert missing_endpoints(graph, [back]) == {}
    assert missing_endpoints(graph, []) == {}
