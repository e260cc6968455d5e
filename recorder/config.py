"""Recorder settings (`snapshots.rosbag.*`), read once from the gateway's settings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.process.settings import ProcessSettings
from gateway.settings.typed import TableSettings
from gateway.wire.settings import ApiSettings

from .selection import TopicChoice

if TYPE_CHECKING:
    from gateway.settings.config import Settings

MIB = 1024 * 1024


def default_state_dir() -> Path:
    """~/.local/state/diag-gateway (XDG_STATE_HOME honoured), as the fault store uses."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "diag-gateway"


@dataclass(frozen=True)
class RosbagKeys(TableSettings):
    """The `snapshots.rosbag.*` settings as the table holds them."""

    PREFIX = "snapshots.rosbag."

    enabled: bool
    duration_sec: float
    duration_after_sec: float
    max_buffer_mb: int
    max_bag_size_mb: int
    max_total_storage_mb: int
    max_bags_per_fault: int
    auto_cleanup: bool
    lazy_start: bool
    format: str
    compression: str
    topic_selection: str
    topics: tuple[str, ...]
    include_topics: tuple[str, ...]
    exclude_topics: tuple[str, ...]
    storage_path: str
    write_queue: int


@dataclass(frozen=True)
class RecorderConfig:
    """Everything the recorder reads from settings."""

    enabled: bool = False
    duration_ns: int = 5_000_000_000
    after_ns: int = 1_000_000_000
    max_buffer_bytes: int = 256 * MIB
    max_bag_bytes: int = 50 * MIB
    max_total_bytes: int = 500 * MIB
    max_bags_per_fault: int = 1
    auto_cleanup: bool = True
    lazy_start: bool = False
    format: str = "mcap"
    compression: str = "none"
    choice: TopicChoice = TopicChoice()
    root: Path = Path("rosbags")
    write_queue: int = 4
    id_prefix: str = "rec"  # recording ids start `<prefix>_`: `fault_` in the medkit profile

    @classmethod
    def from_settings(cls, s: Settings, extra_excluded: frozenset[str] = frozenset()
                      ) -> RecorderConfig:
        """From the gateway's Settings (gateway.settings.config)."""
        k = s.typed(RosbagKeys.from_settings)
        if k.storage_path:
            path = Path(k.storage_path).expanduser()
        else:
            state = s.typed(ProcessSettings.from_settings).state_dir
            path = (Path(state).expanduser() if state else default_state_dir()) / "rosbags"
        return cls(
            enabled=k.enabled,
            duration_ns=int(k.duration_sec * 1e9),
            after_ns=int(k.duration_after_sec * 1e9),
            max_buffer_bytes=k.max_buffer_mb * MIB,
            max_bag_bytes=k.max_bag_size_mb * MIB,
            max_total_bytes=k.max_total_storage_mb * MIB,
            max_bags_per_fault=k.max_bags_per_fault,
            auto_cleanup=k.auto_cleanup,
            lazy_start=k.lazy_start,
            format=k.format,
            compression=k.compression,
            choice=TopicChoice(
                mode=k.topic_selection, topics=k.topics, include=k.include_topics,
                exclude=frozenset(k.exclude_topics) | extra_excluded),
            root=path,
            write_queue=k.write_queue,
            id_prefix="fault" if s.typed(ApiSettings.from_settings).profile == "medkit" else "rec",
        )
