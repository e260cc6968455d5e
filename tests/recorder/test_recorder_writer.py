"""Bag writing: schemas from installed .msg files, MCAP and sqlite3 read by independent readers."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import pytest
import yaml
from mcap.reader import make_reader
from mcap.records import Schema
from mcap_ros2.decoder import DecoderFactory
from rclpy.serialization import serialize_message
from rosbags.rosbag2 import Reader
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from sensor_msgs.msg import LaserScan
from std_msgs.msg import String

from recorder import schemas
from recorder.writer import TopicMeta, write_bag

with warnings.catch_warnings():
    # rclpy loads type support through rosidl_generator_py, which imports lark, which imports
    # the deprecated sre_parse module; load it once here so filterwarnings=error stays on.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rosidl_generator_py  # noqa: F401


def test_ros2msg_definition_follows_rosbag2_layout() -> None:
    text = schemas.ros2msg_definition("sensor_msgs/msg/LaserScan")
    root = schemas.msg_text("sensor_msgs/msg/LaserScan")
    assert text.startswith(root)
    sep = "\n" + "=" * 80 + "\nMSG: "
    deps = [chunk.split("\n", 1)[0] for chunk in text.split(sep)[1:]]
    # depth-first, sorted: std_msgs/Header, then its dependency builtin_interfaces/Time
    assert deps == ["std_msgs/Header", "builtin_interfaces/Time"]
    assert text.endswith(schemas.msg_text("builtin_interfaces/msg/Time"))


def test_dependencies_of_msg_text() -> None:
    text = "# c\nHeader header\nuint8[] data\nPoint[<=3] pts\ngeometry_msgs/msg/Pose p\n" \
           "string<=8 s\nint32 X=3\n"
    assert schemas.dependencies("pkg", text) == {"std_msgs/Header", "pkg/Point",
                                                 "geometry_msgs/Pose"}


def test_type_hash_and_missing_types() -> None:
    assert schemas.type_hash("sensor_msgs/msg/LaserScan").startswith("RIHS01_")
    assert schemas.type_hash("nope_msgs/msg/Nothing") == ""
    with pytest.raises(schemas.SchemaError):
        schemas.ros2msg_definition("nope_msgs/msg/Nothing")
    with pytest.raises(schemas.SchemaError):
        schemas.split_type("NotAType")


def test_qos_profile_in_rosbag2_form() -> None:
    p = schemas.qos_profile("KEEP_LAST", 7, "BEST_EFFORT", "volatile", deadline_ns=1_500_000_000)
    assert p["history"] == "keep_last" and p["reliability"] == "best_effort"
    assert p["deadline"] == {"sec": 1, "nsec": 500_000_000}
    assert p["lifespan"] == {"sec": 9223372036, "nsec": 854775807}
    assert "depth: 7" in schemas.qos_yaml([p]) and schemas.qos_yaml([]) == ""


def _topics() -> list[TopicMeta]:
    def meta(name: str, typ: str) -> TopicMeta:
        return TopicMeta(name, typ, schemas.ros2msg_definition(typ), schemas.type_hash(typ),
                         (schemas.qos_profile("keep_last", 10),))

    return [meta("/scan", "sensor_msgs/msg/LaserScan"), meta("/status", "std_msgs/msg/String"),
            meta("/unused", "std_msgs/msg/String")]


def _messages() -> list[tuple[int, int, int, bytes]]:
    out = []
    for i in range(6):
        scan = LaserScan(ranges=[float(i)] * 4)
        scan.header.frame_id = f"lidar{i}"
        out.append((0, 1000 + 10 * i, 990 + 10 * i, serialize_message(scan)))
        out.append((1, 1005 + 10 * i, 0, serialize_message(String(data=f"s{i}"))))
    return out


@pytest.mark.parametrize("fmt", ["mcap", "sqlite3"])
def test_bag_directory_reads_with_rosbags(tmp_path: Path, fmt: str) -> None:
    info = write_bag(tmp_path, "bag", fmt, _topics(), _messages(),
                     custom_data={"fault_codes": "A"})
    assert info.message_count == 12 and info.topic_counts == {"/scan": 6, "/status": 6}
    assert (info.start_ns, info.end_ns) == (1000, 1055)
    assert (tmp_path / info.file_name).stat().st_size == info.size
    store = get_typestore(Stores.EMPTY)
    with Reader(tmp_path) as reader:
        assert {c.topic for c in reader.connections} == {"/scan", "/status"}  # unused left out
        for c in reader.connections:
            store.register(get_types_from_msg(c.msgdef.data, c.msgtype))
            assert c.digest.startswith("RIHS01_") and c.ext.offered_qos_profiles[0].depth == 10
        got = [(c.topic, t, store.deserialize_cdr(raw, c.msgtype)) for c, t, raw in
               reader.messages()]
    assert [t for _, t, _ in got] == sorted(t for _, t, _ in got)
    meta = yaml.safe_load((tmp_path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["custom_data"] == {"fault_codes": "A"} and meta["storage_identifier"] == fmt
    scans = [m for topic, _, m in got if topic == "/scan"]
    assert [s.header.frame_id for s in scans] == [f"lidar{i}" for i in range(6)]


def test_mcap_file_alone_reads_with_both_readers(tmp_path: Path) -> None:
    info = write_bag(tmp_path, "bag", "mcap", _topics(), _messages())
    path = tmp_path / info.file_name
    with open(path, "rb") as f:
        reader_ = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader_.get_header().profile == "ros2"
        msgs = list(reader_.iter_decoded_messages(log_time_order=True))
        assert "rosbag2" in {m.name for m in reader_.iter_metadata()}
    assert [ch.topic for _, ch, _, _ in msgs][:2] == ["/scan", "/status"]
    schema, channel, message, decoded = msgs[0]
    assert schema.name == "sensor_msgs/msg/LaserScan" and schema.encoding == "ros2msg"
    assert message.log_time == 1000 and message.publish_time == 990
    assert decoded.header.frame_id == "lidar0"
    assert "offered_qos_profiles" in channel.metadata
    assert channel.metadata["topic_type_hash"].startswith("RIHS01_")
    reader = McapReader(path)
    reader.open()
    try:
        assert sum(1 for _ in reader.messages(reader.connections)) == 12
    finally:
        reader.close()


def test_sqlite3_file_alone_reads_with_both_decoders(tmp_path: Path) -> None:
    info = write_bag(tmp_path, "bag", "sqlite3", _topics(), _messages())
    path = tmp_path / info.file_name
    reader = Sqlite3Reader(path)
    reader.open()
    try:
        assert {c.topic for c in reader.connections} == {"/scan", "/status"}
        assert sum(1 for _ in reader.messages(reader.connections)) == 12
    finally:
        reader.close()
    # stdlib sqlite3 plus the mcap-ros2-support CDR decoder built from the stored definition
    conn = sqlite3.connect(path)
    defs = dict(conn.execute("SELECT topic_type, encoded_message_definition "
                             "FROM message_definitions"))
    rows = conn.execute("SELECT t.name, t.type, m.timestamp, m.data FROM messages m "
                        "JOIN topics t ON t.id = m.topic_id ORDER BY m.timestamp").fetchall()
    conn.close()
    factory = DecoderFactory()
    decoders = {typ: factory.decoder_for(  # the factory caches decoders by schema id
        "cdr", Schema(id=i + 1, name=typ, encoding="ros2msg", data=text.encode()))
                for i, (typ, text) in enumerate(defs.items())}
    decoded = [(name, decoders[typ](data)) for name, typ, _, data in rows]
    assert [m.data for name, m in decoded if name == "/status"] == [f"s{i}" for i in range(6)]


def test_a_failed_write_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_bag(tmp_path, "bag", "ros1", _topics(), _messages())
