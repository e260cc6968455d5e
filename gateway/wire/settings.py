"""The wire profile's settings (`api.*`), read once into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class ApiSettings(TableSettings):
    """The `api.*` settings: the vendor word and the wire profile."""

    PREFIX = "api."

    vendor: str
    profile: str
