"""The bulk-data settings (`bulk_data.*`), read once into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class BulkDataSettings(TableSettings):
    """The `bulk_data.*` settings."""

    PREFIX = "bulk_data."

    max_upload_size: int
    categories: tuple[str, ...]
    storage_path: str
