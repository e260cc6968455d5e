"""The fault manager's settings (`faults.*`, `snapshots.*` but the recorder's, `correlation.*`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class FaultSettings(TableSettings):
    """The `faults.*` settings: debounce, dedup and the bridges (code_map: the open keys)."""

    PREFIX = "faults."
    OPEN = {"diagnostics_bridge_code_map": "faults.diagnostics_bridge.code_map."}

    confirmation_threshold: int
    healing_enabled: bool
    healing_threshold: int
    critical_immediate_confirm: bool
    auto_confirm_after_sec: float
    dedup_retention_sec: float
    rosout_bridge_enabled: bool
    rosout_bridge_cooldown_sec: float
    rosout_bridge_code_tags: bool
    diagnostics_bridge_enabled: bool
    diagnostics_bridge_topic: str
    action_bridge_enabled: bool
    action_bridge_report_canceled: bool
    diagnostics_bridge_code_map: Mapping[str, Any]  # DiagnosticStatus name -> fault code


@dataclass(frozen=True)
class SnapshotSettings(TableSettings):
    """The freeze-frame `snapshots.*` settings (`snapshots.rosbag.*` is the recorder's)."""

    PREFIX = "snapshots."

    enabled: bool
    config_file: str
    entity_default: bool
    retain_on_clear: bool
    timeout_sec: float
    default_topics: tuple[str, ...]


@dataclass(frozen=True)
class CorrelationSettings(TableSettings):
    """The `correlation.*` settings."""

    PREFIX = "correlation."

    config_file: str
