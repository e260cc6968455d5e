"""Decode `ros_discovery_info` samples (rmw_dds_common/msg/ParticipantEntitiesInfo) of any
distribution: gids are `uint8[24]` up to Humble and `uint8[16]` since Iron.

    ParticipantEntitiesInfo: Gid gid, NodeEntitiesInfo[] node_entities_info_seq
    NodeEntitiesInfo: string<=256 node_namespace, string<=256 node_name,
                      Gid[] reader_gid_seq, Gid[] writer_gid_seq

A gid's first 16 bytes are the DDS GUID (Humble pads it with zeros), so both layouts give
16-byte gids here. Pure code: bytes in, values out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

GUID_BYTES = 16
LAYOUTS = (16, 24)  # gid sizes: Iron and later, then Humble (and older)
_MAX_NAME = 256
EPROSIMA = b"\x01\x0f"  # Fast DDS vendor id, the first two bytes of its GUID prefixes
_CDR_BE, _CDR_LE = b"\x00\x00", b"\x00\x01"


def prefix_pid_key(prefix: bytes) -> int | None:
    """The process id bits of a Fast DDS participant's GUID prefix; None for other vendors."""
    if len(prefix) < 6 or prefix[:2] != EPROSIMA:
        return None
    return int.from_bytes(prefix[4:6], "little")


@dataclass(frozen=True)
class NodeEntities:
    """One node of a participant: its name and the GUIDs of its readers and writers."""

    namespace: str
    name: str
    readers: frozenset[bytes]
    writers: frozenset[bytes]


@dataclass(frozen=True)
class ParticipantEntities:
    """One participant's node list, and the gid size it was encoded with."""

    guid: bytes
    nodes: tuple[NodeEntities, ...]
    gid_size: int


class LayoutError(ValueError):
    """The bytes are not a ParticipantEntitiesInfo of the layout tried."""


class _Reader:
    def __init__(self, body: bytes, little: bool) -> None:
        self.body = body
        self.pos = 0
        self.u32 = struct.Struct("<I" if little else ">I")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.body):
            raise LayoutError("truncated")
        out = self.body[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint32(self) -> int:
        self.pos += -self.pos % 4
        return int(self.u32.unpack(self.take(4))[0])

    def string(self) -> str:
        size = self.uint32()
        if size == 0 or size > _MAX_NAME + 1:
            raise LayoutError("bad string length")
        raw = self.take(size)
        if raw[-1] != 0 or 0 in raw[:-1]:
            raise LayoutError("string not NUL-terminated")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError:
            raise LayoutError("string not UTF-8") from None

    def gids(self, gid_size: int) -> frozenset[bytes]:
        count = self.uint32()
        if count * gid_size > len(self.body) - self.pos:
            raise LayoutError("gid sequence longer than the sample")
        return frozenset(self.take(gid_size)[:GUID_BYTES] for _ in range(count))


def decode_as(sample: bytes, gid_size: int) -> ParticipantEntities:
    """Decode a serialized sample (with its 4-byte CDR header) with one gid size."""
    if len(sample) < 4 or sample[:2] not in (_CDR_BE, _CDR_LE):
        raise LayoutError("not plain CDR")
    r = _Reader(sample[4:], little=sample[:2] == _CDR_LE)
    guid = r.take(gid_size)[:GUID_BYTES]
    nodes = []
    for _ in range(r.uint32()):
        namespace, name = r.string(), r.string()
        if not namespace.startswith("/") or not name:
            raise LayoutError("not a node name")
        readers, writers = r.gids(gid_size), r.gids(gid_size)
        nodes.append(NodeEntities(namespace, name, readers, writers))
    if len(r.body) - r.pos > 3:  # at most alignment padding may follow
        raise LayoutError("bytes left over")
    return ParticipantEntities(guid, tuple(nodes), gid_size)


def decode(sample: bytes) -> ParticipantEntities:
    """Decode a sample of either layout (the one that reads it exactly); LayoutError if none."""
    errors = []
    for gid_size in LAYOUTS:
        try:
            return decode_as(sample, gid_size)
        except LayoutError as exc:
            errors.append(f"{gid_size}-byte gids: {exc}")
    raise LayoutError("; ".join(errors))


def encode(info: ParticipantEntities, gid_size: int | None = None) -> bytes:
    """Serialize (little-endian CDR) with the given gid size: what a Humble (24) or Iron+ (16)
    participant sends."""
    size = gid_size or info.gid_size
    out = bytearray(_CDR_LE + b"\x00\x00")

    def align4() -> None:
        out.extend(b"\x00" * (-(len(out) - 4) % 4))

    def u32(value: int) -> None:
        align4()
        out.extend(struct.pack("<I", value))

    def gid(value: bytes) -> None:
        out.extend(value[:size].ljust(size, b"\x00"))

    def string(text: str) -> None:
        raw = text.encode() + b"\x00"
        u32(len(raw))
        out.extend(raw)

    gid(info.guid)
    u32(len(info.nodes))
    for node in info.nodes:
        string(node.namespace)
        string(node.name)
        for seq in (node.readers, node.writers):
            u32(len(seq))
            for g in sorted(seq):
                gid(g)
    return bytes(out)
