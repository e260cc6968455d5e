"""ros_discovery_info samples of both layouts; the tracker that keeps and renews them."""

from __future__ import annotations

import pytest

from gateway.ros.graph.discovery_info import RELEARN_AFTER_S, RELEARN_EVERY_S, DiscoveryInfo
from gateway.ros.graph.discovery_layout import (
    LayoutError,
    NodeEntities,
    ParticipantEntities,
    decode,
    decode_as,
    encode,
)
from gateway.ros.graph.orphans import ros_type

# Serialized by rmw_fastrtps_cpp (Kilted): node /ns/talker, 2 readers, 3 writers.
KILTED_SAMPLE = bytes.fromhex(
    "00010000010f78fdcb5a5c5600000000000001c101000000040000002f6e73000700000074616c6b657200"
    "0002000000010f78fdcb5a5c560000000000000404010f78fdcb5a5c56000000000000070403000000010f"
    "78fdcb5a5c560000000000000303010f78fdcb5a5c560000000000000503010f78fdcb5a5c560000000000"
    "000603")
PREFIX = bytes.fromhex("010f78fdcb5a5c5600000000")


def _guid(entity: str) -> bytes:
    return PREFIX + bytes.fromhex(entity)


def test_a_kilted_sample_decodes_with_16_byte_gids() -> None:
    info = decode(KILTED_SAMPLE)
    assert info.gid_size == 16 and info.guid == _guid("000001c1")
    (node,) = info.nodes
    assert (node.namespace, node.name) == ("/ns", "talker")
    assert node.readers == {_guid("00000404"), _guid("00000704")}
    assert node.writers == {_guid("00000303"), _guid("00000503"), _guid("00000603")}


def test_the_humble_layout_round_trips_and_is_told_apart() -> None:
    info = decode(KILTED_SAMPLE)
    humble = encode(info, 24)
    assert len(humble) > len(KILTED_SAMPLE)
    # what a 16-byte reader (the Kilted rmw) makes of it: no nodes and bytes left over
    with pytest.raises(LayoutError):
        decode_as(humble, 16)
    again = decode(humble)
    assert again.gid_size == 24 and again.nodes == info.nodes and again.guid == info.guid
    assert encode(info, 16) == KILTED_SAMPLE


def test_several_nodes_and_an_empty_participant() -> None:
    nodes = tuple(NodeEntities("/robot", f"n{i}", frozenset({_guid(f"0000{i:02x}04")}),
                               frozenset()) for i in range(3))
    for size in (16, 24):
        info = ParticipantEntities(_guid("000001c1"), nodes, size)
        assert decode(encode(info)) == info
        empty = ParticipantEntities(_guid("000001c1"), (), size)
        assert decode(encode(empty)) == empty


@pytest.mark.parametrize("sample", [b"", b"\x00\x01\x00\x00", b"\x00\x07\x00\x00" + b"\x00" * 24,
                                    KILTED_SAMPLE[:-5], KILTED_SAMPLE + b"\x01" * 8])
def test_garbage_is_a_layout_error(sample: bytes) -> None:
    with pytest.raises(LayoutError):
        decode(sample)


def test_big_endian_samples_decode() -> None:
    info = decode(KILTED_SAMPLE)
    little = encode(info, 24)
    # re-encode big-endian by hand: header and every uint32 swapped
    import struct

    out = bytearray(b"\x00\x00\x00\x00")
    out += info.guid + b"\x00" * 8
    out += struct.pack(">I", 1)
    for text in ("/ns", "talker"):
        out += b"\x00" * (-(len(out) - 4) % 4) + struct.pack(">I", len(text) + 1)
        out += text.encode() + b"\x00"
    for seq in (info.nodes[0].readers, info.nodes[0].writers):
        out += b"\x00" * (-(len(out) - 4) % 4) + struct.pack(">I", len(seq))
        for g in sorted(seq):
            out += g + b"\x00" * 8
    assert decode(bytes(out)) == decode(little)


@pytest.mark.parametrize(("dds", "ros"), [
    ("std_msgs::msg::dds_::String_", "std_msgs/msg/String"),
    ("std_srvs::srv::dds_::Trigger_Request_", "std_srvs/srv/Trigger"),
    ("std_srvs::srv::dds_::Trigger_Response_", "std_srvs/srv/Trigger"),
    ("test_msgs::action::dds_::Fibonacci_SendGoal_Request_", "test_msgs/action/Fibonacci_SendGoal"),
    ("std_msgs/msg/String", "std_msgs/msg/String"),
])
def test_dds_type_names(dds: str, ros: str) -> None:
    assert ros_type(dds) == ros


class FakeReader:
    """Stands in for the DDS reader: samples handed to take(), closes counted."""

    made: list[FakeReader] = []

    def __init__(self, node: object) -> None:
        self.pending: list[bytes] = []
        self.closed = False
        FakeReader.made.append(self)

    def take(self) -> list[bytes]:
        out, self.pending = self.pending, []
        return out

    def close(self) -> None:
        self.closed = True


def test_a_sample_is_kept_while_its_participant_is_away() -> None:
    FakeReader.made = []
    tracker = DiscoveryInfo(object(), reader_factory=FakeReader)
    FakeReader.made[0].pending.append(KILTED_SAMPLE)
    tracker.refresh({PREFIX}, now=0.0)
    assert [n.name for p in tracker.participants({PREFIX}) for n in p.nodes] == ["talker"]
    tracker.refresh(set(), now=10.0)  # lease lost: not on the graph
    assert tracker.participants(set()) == []
    tracker.refresh({PREFIX}, now=20.0)  # back, and it sends nothing new
    assert [n.name for p in tracker.participants({PREFIX}) for n in p.nodes] == ["talker"]
    assert _guid("00000303") in tracker.writer_guids({PREFIX})
    assert len(FakeReader.made) == 1  # nothing was missing: no new reader
    assert tracker.stats()["participants_returned"] == 1


def test_a_participant_without_a_sample_gets_a_new_reader() -> None:
    FakeReader.made = []
    tracker = DiscoveryInfo(object(), reader_factory=FakeReader)
    tracker.refresh({PREFIX}, now=100.0)
    tracker.refresh({PREFIX}, now=100.0 + RELEARN_AFTER_S / 2)
    assert len(FakeReader.made) == 1
    tracker.refresh({PREFIX}, now=100.0 + RELEARN_AFTER_S)
    assert len(FakeReader.made) == 2 and FakeReader.made[0].closed
    # renewed at most every RELEARN_EVERY_S
    tracker.refresh({PREFIX}, now=100.0 + RELEARN_AFTER_S + 0.1)
    assert len(FakeReader.made) == 2
    FakeReader.made[1].pending.append(encode(decode(KILTED_SAMPLE), 24))
    tracker.refresh({PREFIX}, now=100.0 + RELEARN_AFTER_S + RELEARN_EVERY_S)
    assert len(FakeReader.made) == 2
    assert tracker.stats()["humble_participants"] == 1
