"""rosbag2 bag directories: MCAP (with the `mcap` library) or sqlite3 storage, plus metadata.yaml.

A bag directory holds `<name>_0.<ext>` and `metadata.yaml` (written last), the layout
`ros2 bag` and `rosbags` read. The storage file alone is self-describing too: MCAP carries
the `rosbag2` metadata record, sqlite3 its `metadata` table.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import yaml

from .schemas import qos_yaml

FORMATS = ("mcap", "sqlite3")
SUFFIX = {"mcap": "mcap", "sqlite3": "db3"}
MIMETYPE = {"mcap": "application/x-mcap", "sqlite3": "application/x-sqlite3"}
METADATA_VERSION = 9
ROS_DISTRO = "kilted"
LIBRARY = "diag-gateway recorder"

# (topic index, received ns, source ns, CDR bytes), oldest first
BagMessage = tuple[int, int, int, bytes]


@dataclass(frozen=True)
class TopicMeta:
    """A recorded topic: name, type (pkg/msg/Type), ros2msg schema, type hash, offered QoS."""

    name: str
    type: str
    definition: str
    type_hash: str = ""
    qos: tuple[Mapping[str, Any], ...] = ()


@dataclass
class BagInfo:
    """What a finished bag holds."""

    file_name: str
    size: int
    message_count: int
    start_ns: int
    end_ns: int
    topic_counts: dict[str, int] = field(default_factory=dict)


class Storage(Protocol):
    """One storage back-end writing one file."""

    def add_topic(self, index: int, topic: TopicMeta) -> None:
        """Declare topic `index` before its first message."""

    def write(self, index: int, recv_ns: int, source_ns: int, data: bytes) -> None:
        """Append one message."""

    def close(self, metadata_yaml: str) -> None:
        """Finish the file (summary, metadata record or table)."""

    def abort(self) -> None:
        """Close without finishing (the caller deletes the file)."""


class McapStorage:
    """MCAP with `ros2msg` schemas, `cdr` channels and rosbag2's channel metadata."""

    def __init__(self, path: Path, compression: str = "none") -> None:
        from mcap.writer import CompressionType, Writer  # noqa: PLC0415 - mcap only once recording

        kinds = {"none": CompressionType.NONE, "lz4": CompressionType.LZ4,
                 "zstd": CompressionType.ZSTD}
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 (closed in close/abort)
        self._writer = Writer(self._file, compression=kinds[compression])
        self._writer.start(profile="ros2", library=LIBRARY)
        self._schemas: dict[str, int] = {}
        self._channels: dict[int, int] = {}
        self._seq: dict[int, int] = {}

    def add_topic(self, index: int, topic: TopicMeta) -> None:
        """Register the type's schema (once) and the topic's channel."""
        schema_id = self._schemas.get(topic.type)
        if schema_id is None:
            schema_id = self._writer.register_schema(
                name=topic.type, encoding="ros2msg", data=topic.definition.encode())
            self._schemas[topic.type] = schema_id
        self._channels[index] = self._writer.register_channel(
            topic=topic.name, message_encoding="cdr", schema_id=schema_id,
            metadata={"offered_qos_profiles": qos_yaml(topic.qos),
                      "topic_type_hash": topic.type_hash})
        self._seq[index] = 0

    def write(self, index: int, recv_ns: int, source_ns: int, data: bytes) -> None:
        """log_time is the receive time, publish_time the source time (rosbag2's choice)."""
        self._seq[index] += 1
        self._writer.add_message(self._channels[index], log_time=recv_ns, data=data,
                                 publish_time=source_ns or recv_ns, sequence=self._seq[index])

    def close(self, metadata_yaml: str) -> None:
        """Metadata record `rosbag2`, summary, footer."""
        self._writer.add_metadata("rosbag2", {"serialized_metadata": metadata_yaml})
        self._writer.finish()
        _sync_close(self._file)

    def abort(self) -> None:
        """Close the file as it is."""
        self._file.close()


_SQLITE_SCHEMA = """
CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL,
                      metadata TEXT NOT NULL);
CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                    serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL,
                    type_description_hash TEXT NOT NULL);
CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL,
                                 encoding TEXT NOT NULL,
                                 encoded_message_definition TEXT NOT NULL,
                                 type_description_hash TEXT NOT NULL);
CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
                      timestamp INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX timestamp_idx ON messages (timestamp ASC);
"""


class Sqlite3Storage:
    """rosbag2's sqlite3 schema version 4 (topics, message_definitions, messages, metadata)."""

    BATCH = 256

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(str(path), isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=MEMORY")
        self._conn.execute("PRAGMA synchronous=OFF")  # the whole file is fsynced at close
        self._conn.executescript(_SQLITE_SCHEMA)
        self._conn.execute("BEGIN")
        self._conn.execute("INSERT INTO schema VALUES (4, ?)", (ROS_DISTRO,))
        self._types: set[str] = set()
        self._pending: list[tuple[int, int, bytes]] = []
        self._path = path

    def add_topic(self, index: int, topic: TopicMeta) -> None:
        """One topics row; one message_definitions row per type."""
        self._conn.execute("INSERT INTO topics VALUES (?, ?, ?, 'cdr', ?, ?)",
                           (index + 1, topic.name, topic.type, qos_yaml(topic.qos),
                            topic.type_hash))
        if topic.type not in self._types:
            self._types.add(topic.type)
            self._conn.execute(
                "INSERT INTO message_definitions (topic_type, encoding, "
                "encoded_message_definition, type_description_hash) VALUES (?, 'ros2msg', ?, ?)",
                (topic.type, topic.definition, topic.type_hash))

    def write(self, index: int, recv_ns: int, source_ns: int, data: bytes) -> None:
        """The sqlite3 schema keeps the receive time only."""
        self._pending.append((index + 1, recv_ns, data))
        if len(self._pending) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        self._conn.executemany(
            "INSERT INTO messages (topic_id, timestamp, data) VALUES (?, ?, ?)", self._pending)
        self._pending = []

    def close(self, metadata_yaml: str) -> None:
        """Metadata row, commit, fsync."""
        self._flush()
        self._conn.execute("INSERT INTO metadata (metadata_version, metadata) VALUES (?, ?)",
                           (METADATA_VERSION, metadata_yaml))
        self._conn.execute("COMMIT")
        self._conn.close()
        with open(self._path, "rb+") as f:
            os.fsync(f.fileno())

    def abort(self) -> None:
        """Roll back and close."""
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        self._conn.close()


def _sync_close(f: BinaryIO) -> None:
    f.flush()
    os.fsync(f.fileno())
    f.close()


def open_storage(fmt: str, path: Path, compression: str = "none") -> Storage:
    """The storage back-end of a format."""
    if fmt == "mcap":
        return McapStorage(path, compression)
    if fmt == "sqlite3":
        return Sqlite3Storage(path)
    raise ValueError(f"unknown bag format {fmt!r}; use one of {', '.join(FORMATS)}")


def _time(ns: int) -> dict[str, int]:
    return {"nanoseconds_since_epoch": ns}


def bag_metadata(fmt: str, file_name: str, topics: Sequence[TopicMeta], info: BagInfo,
                 compression: str = "none",
                 custom_data: Mapping[str, str] | None = None) -> dict[str, Any]:
    """rosbag2's metadata.yaml tree (version 9)."""
    duration = max(0, info.end_ns - info.start_ns) if info.message_count else 0
    start = info.start_ns if info.message_count else 0
    comp_fmt = compression if fmt == "mcap" and compression != "none" else ""
    return {"rosbag2_bagfile_information": {
        "version": METADATA_VERSION,
        "storage_identifier": fmt,
        "duration": {"nanoseconds": duration},
        "starting_time": _time(start),
        "message_count": info.message_count,
        "topics_with_message_count": [
            {"topic_metadata": {"name": t.name, "type": t.type, "serialization_format": "cdr",
                                "offered_qos_profiles": [dict(q) for q in t.qos],
                                "type_description_hash": t.type_hash},
             "message_count": info.topic_counts.get(t.name, 0)}
            for t in topics],
        "compression_format": comp_fmt,
        "compression_mode": "message" if comp_fmt else "",
        "relative_file_paths": [file_name],
        "files": [{"path": file_name, "starting_time": _time(start),
                   "duration": {"nanoseconds": duration},
                   "message_count": info.message_count}],
        "custom_data": dict(custom_data or {}),
        "ros_distro": ROS_DISTRO,
    }}


def write_bag(directory: Path, name: str, fmt: str, topics: Sequence[TopicMeta],
              messages: Iterable[BagMessage], *, compression: str = "none",
              custom_data: Mapping[str, str] | None = None) -> BagInfo:
    """Write `<directory>/<name>_0.<ext>` and `metadata.yaml`; returns what was written.

    Topics without messages are left out. On an exception the storage file is closed
    unfinished and the exception propagates (the caller discards the directory).
    """
    messages = list(messages)
    used = sorted({m[0] for m in messages})
    remap = {old: new for new, old in enumerate(used)}
    kept = [topics[i] for i in used]
    if fmt not in SUFFIX:
        raise ValueError(f"unknown bag format {fmt!r}; use one of {', '.join(FORMATS)}")
    file_name = f"{name}_0.{SUFFIX[fmt]}"
    path = directory / file_name
    storage = open_storage(fmt, path, compression)
    info = BagInfo(file_name, 0, 0, 0, 0, {t.name: 0 for t in kept})
    try:
        for new, topic in enumerate(kept):
            storage.add_topic(new, topic)
        for index, recv, src, data in messages:
            storage.write(remap[index], recv, src, data)
            if info.message_count == 0 or recv < info.start_ns:
                info.start_ns = recv
            info.end_ns = max(info.end_ns, recv)
            info.message_count += 1
            info.topic_counts[topics[index].name] += 1
        meta = yaml.safe_dump(bag_metadata(fmt, file_name, kept, info, compression,
                                           custom_data), sort_keys=False)
        storage.close(meta)
    except BaseException:
        storage.abort()
        raise
    info.size = path.stat().st_size
    meta_path = directory / "metadata.yaml"
    with open(meta_path, "w", encoding="utf-8") as f:
        f.write(meta)
        f.flush()
        os.fsync(f.fileno())
    return info
