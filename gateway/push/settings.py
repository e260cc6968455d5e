"""The push settings (`triggers.*`, `fault_triggers.*`), read once into frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class TriggerSettings(TableSettings):
    """The `triggers.*` settings."""

    PREFIX = "triggers."

    enabled: bool
    max_triggers: int
    storage_path: str
    on_restart_behavior: str
    orphan_grace_sec: float


@dataclass(frozen=True)
class FaultTriggerSettings(TableSettings):
    """The `fault_triggers.*` settings."""

    PREFIX = "fault_triggers."

    enabled: bool
    poll_interval_ms: int
    max_rules: int
    storage_path: str
