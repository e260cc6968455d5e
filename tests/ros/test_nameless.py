"""Participants without a node list (ros/graph/nameless.py), Cyclone DDS's request header
(ros/calls/cyclone_calls.py) and the DDS profile (ros/dds/ddsprofile.py): the pure parts, over a
fake graph."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.ros.calls.cyclone_calls import decode_reply, encode_request, servers_are_cyclone
from gateway.ros.dds.ddsprofile import GATEWAY_PROFILE, PROFILE_VAR, prepare
from gateway.ros.graph.nameless import Nameless, endpoint_fqn, participant_name, vendor_of

CYCLONE = bytes.fromhex("0110aabbccddeeff00112233")  # GUID prefixes: vendor id first
FASTDDS = bytes.fromhex("010f11223344556677889900")
BARE = "_CREATED_BY_BARE_DDS_APP_"


@dataclass
class Info:
    """rclpy's TopicEndpointInfo, as much as the code reads."""

    node_name: str
    node_namespace: str
    topic_type: str
    endpoint_gid: bytes


def ep(prefix: bytes, entity: int, node: str = BARE, ns: str = BARE,
       type_: str = "std_msgs::msg::dds_::String_") -> Info:
    return Info(node, ns, type_, prefix + entity.to_bytes(4, "big"))


class Graph:
    """A graph queried like an rclpy node: DDS topic -> (writers, readers)."""

    def __init__(self) -> None:
        self.topics: dict[str, tuple[list[Info], list[Info]]] = {}
        self.info_queries = 0

    def get_topic_names_and_types(self, no_demangle: bool = False) -> list[tuple[str, list[str]]]:
        return [(name, ["t"]) for name in sorted(self.topics)]

    def get_publishers_info_by_topic(self, name: str, no_mangle: bool = False) -> list[Info]:
        self.info_queries += 1
        return list(self.topics.get(name, ([], []))[0])

    def get_subscriptions_info_by_topic(self, name: str, no_mangle: bool = False) -> list[Info]:
        self.info_queries += 1
        return list(self.topics.get(name, ([], []))[1])


def bare_graph() -> Graph:
    g = Graph()
    g.topics["rt/cy/temp"] = ([ep(CYCLONE, 1, type_="sensor_msgs::msg::dds_::Temperature_"),
                               ep(FASTDDS, 1, "talker", "/")], [])
    g.topics["rt/cy/cmd"] = ([], [ep(CYCLONE, 2)])
    g.topics["rq/cy/triggerRequest"] = ([], [ep(CYCLONE, 3,
                                                type_="std_srvs::srv::dds_::Trigger_Request_")])
    g.topics["rr/cy/triggerReply"] = ([ep(CYCLONE, 4,
                                          type_="std_srvs::srv::dds_::Trigger_Response_")], [])
    g.topics["ros_discovery_info"] = ([ep(FASTDDS, 9, "_NODE_NAME_UNKNOWN_")], [])
    return g


def test_names_carry_the_vendor_and_the_participant() -> None:
    assert participant_name(CYCLONE) == "dds_cyclone_aabbccddeeff00112233"
    assert participant_name(bytes.fromhex("beef") + bytes(10)) == "dds_beef_" + "00" * 10
    assert vendor_of(FASTDDS + bytes(4)) == "fastdds"


def test_a_participant_without_node_list_becomes_one_node_after_its_grace() -> None:
    g = bare_graph()
    nameless = Nameless(grace_s=2.0)
    assert nameless.nodes(g, (), frozenset(), set(), now=100.0) == []  # within its grace
    assert nameless.prefixes() == {CYCLONE}
    [node] = nameless.nodes(g, (), frozenset(), set(), now=102.5)
    assert node.name == participant_name(CYCLONE) and node.namespace == "/"
    assert node.publishers == (("/cy/temp", "sensor_msgs/msg/Temperature"),)
    assert node.subscribers == (("/cy/cmd", "std_msgs/msg/String"),)
    assert node.services == (("/cy/trigger", "std_srvs/srv/Trigger"),)
    # The named publisher of /cy/temp and the ros_discovery_info writer belong to no one here.
    assert nameless.stats()["participants"] == 1


def test_endpoints_a_kept_node_list_claims_are_not_nameless() -> None:
    g = bare_graph()
    nameless = Nameless(grace_s=0.0)
    claimed = frozenset(i.endpoint_gid for w, r in g.topics.values() for i in w + r
                        if i.endpoint_gid.startswith(CYCLONE))
    assert nameless.nodes(g, (), claimed, set(), now=1.0) == []
    assert nameless.prefixes() == frozenset()


def test_the_graph_is_scanned_again_only_when_it_moved() -> None:
    g = bare_graph()
    nameless = Nameless(grace_s=1.0)
    nameless.nodes(g, (1, 2), frozenset(), set(), now=0.0)
    nameless.nodes(g, (1, 2), frozenset(), set(), now=0.5)  # waiting out the grace: scanned
    scans = nameless.scans
    for t in (2.0, 3.0, 4.0):
        assert len(nameless.nodes(g, (1, 2), frozenset(), set(), now=t)) == 1
    assert nameless.scans == scans  # nothing moved, nothing waits: no endpoint queries
    nameless.nodes(g, (1, 3), frozenset(), set(), now=5.0)  # a count changed
    assert nameless.scans == scans + 1
    del g.topics["rt/cy/temp"], g.topics["rt/cy/cmd"], g.topics["rq/cy/triggerRequest"]
    assert nameless.nodes(g, (1, 3), frozenset(), set(), now=6.0) == []  # it left


def test_an_endpoint_is_named_by_the_rmw_its_node_list_or_its_participant() -> None:
    assert endpoint_fqn(ep(FASTDDS, 1, "talker", "/robot")) == "/robot/talker"
    assert endpoint_fqn(ep(FASTDDS, 1, "talker", "/")) == "/talker"
    bare = ep(CYCLONE, 1)
    assert endpoint_fqn(bare) == "/" + participant_name(CYCLONE)
    assert endpoint_fqn(bare, lambda gid: "/humble_node") == "/humble_node"
    assert endpoint_fqn(bare, lambda gid: None) == "/" + participant_name(CYCLONE)


def test_cyclone_servers_are_told_apart() -> None:
    g = bare_graph()
    assert servers_are_cyclone(g, "/cy/trigger")
    assert servers_are_cyclone(g, "cy/trigger")
    assert not servers_are_cyclone(g, "/nothing")
    g.topics["rq/cy/triggerRequest"][1].append(ep(FASTDDS, 5, "srv", "/"))
    assert not servers_are_cyclone(g, "/cy/trigger")  # a mixed service: the rmw's own way


def test_the_request_header_keeps_the_fields_aligned() -> None:
    cdr = b"\x00\x01\x00\x00" + b"\x07\x00\x00\x00abcdefg\x00"
    wire = encode_request(cdr, client_id=0x1122334455667788, seq=5)
    assert wire[:4] == cdr[:4] and len(wire) == len(cdr) + 16
    assert wire[4:12] == (0x1122334455667788).to_bytes(8, "little")
    assert wire[12:20] == (5).to_bytes(8, "little") and wire[20:] == cdr[4:]
    assert decode_reply(wire) == (0x1122334455667788, 5, cdr)
    for bad in (b"\x00\x01\x00\x00" + bytes(8), b"\x00\x00\x00\x00" + bytes(20)):
        with pytest.raises(ValueError):
            decode_reply(bad)
    with pytest.raises(ValueError):
        encode_request(b"\x00\x00\x00\x00\x01", 1, 1)  # big-endian: not what it sends


def test_the_profile_is_the_gateways_unless_the_user_chose_one(tmp_path: Path,
                                                               caplog: Any) -> None:
    env: dict[str, str] = {}
    assert "matched by name" in prepare(True, env)
    assert env[PROFILE_VAR] == str(GATEWAY_PROFILE)
    assert "fastdds.type_propagation" in GATEWAY_PROFILE.read_text()
    env = {}
    prepare(False, env)
    assert PROFILE_VAR not in env
    own = tmp_path / "own.xml"
    own.write_text("<dds><profiles/></dds>")
    env = {PROFILE_VAR: str(own)}
    assert "without fastdds.type_propagation" in prepare(True, env)
    assert env[PROFILE_VAR] == str(own)  # kept as it is
    assert "Cyclone DDS robots" in caplog.text
    own.write_text("<property><name>fastdds.type_propagation</name></property>")
    assert "sets fastdds.type_propagation" in prepare(True, env)


def test_the_unseen_warning_tells_a_frozen_node_from_a_running_participant() -> None:
    from gateway.discovery.poller import unseen_reason

    assert "frozen past its lease, listed again" in unseen_reason({10: "S", 11: "T"})
    assert "11" in unseen_reason({10: "S", 11: "T"})
    running = unseen_reason({10: "S", 12: "R"})
    assert "not a ROS one" in running and "stopped" not in running
