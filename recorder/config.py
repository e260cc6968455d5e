"""Recorder settings (`snapshots.rosbag.*`), read once from the gateway's settings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .selection import TopicChoice

MIB = 1024 * 1024
PREFIX = "snapshots.rosbag."


def default_state_dir() -> Path:
    """~/.local/state/diag-gateway (XDG_STATE_HOME honoured), as the fault store uses."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "diag-gateway"


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
    def from_settings(cls, s: Any, extra_excluded: frozenset[str] = frozenset()
                      ) -> RecorderConfig:
        """From the gateway's Settings (gateway.settings.config)."""

        def get(key: str) -> Any:
            return s[PREFIX + key]

        root = get("storage_path")
        if root:
            path = Path(root).expanduser()
        else:
            state = s["state_dir"]
            path = (Path(state).expanduser() if state else default_state_dir()) / "rosbags"
        return cls(
            enabled=bool(get("enabled")),
            duration_ns=int(float(get("duration_sec")) * 1e9),
            after_ns=int(float(get("duration_after_sec")) * 1e9),
            max_buffer_bytes=int(get("max_buffer_mb")) * MIB,
            max_bag_bytes=int(get("max_bag_size_mb")) * MIB,
            max_total_bytes=int(get("max_total_storage_mb")) * MIB,
            max_bags_per_fault=int(get("max_bags_per_fault")),
            auto_cleanup=bool(get("auto_cleanup")),
            lazy_start=bool(get("lazy_start")),
            format=str(get("format")),
            compression=str(get("compression")),
            choice=TopicChoice(
                mode=str(get("topic_selection")),
                topics=tuple(get("topics") or ()),
                include=tuple(get("include_topics") or ()),
                exclude=frozenset(get("exclude_topics") or ()) | extra_excluded),
            root=path,
            write_queue=int(get("write_queue")),
            id_prefix="fault" if s["api.profile"] == "medkit" else "rec",
        )
