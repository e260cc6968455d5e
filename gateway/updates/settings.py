"""The software update settings (`updates.*`), read once into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class UpdateSettings(TableSettings):
    """The `updates.*` settings."""

    PREFIX = "updates."

    enabled: bool
    operation_timeout_sec: float
