"""The dashboard settings (`dashboard.*`), read once into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class DashboardSettings(TableSettings):
    """The `dashboard.*` settings."""

    PREFIX = "dashboard."

    enabled: bool
