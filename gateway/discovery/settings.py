"""The discovery settings (`discovery.*`, `entity_cache.*`), read once into frozen dataclasses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class DiscoverySettings(TableSettings):
    """The `discovery.*` settings: the mode, graph polling, manifests and the merge pipeline."""

    PREFIX = "discovery."
    OPEN = {"merge_pipeline_layers": "discovery.merge_pipeline.layers."}

    mode: str
    refresh_debounce_ms: int
    poll_interval_ms: int
    idle_poll_interval_ms: int
    watched_idle_poll_interval_ms: int
    manifest_path: str
    manifest_strict_validation: bool
    manifest_fragments_dir: str
    manifest_watch_interval_ms: int
    manifest_settle_ms: int
    inventory_csv_path: str
    runtime_enabled: bool
    merge_pipeline_gap_fill_allow_heuristic_apps: bool
    merge_pipeline_gap_fill_allow_heuristic_functions: bool
    merge_pipeline_gap_fill_namespace_whitelist: tuple[str, ...]
    merge_pipeline_gap_fill_namespace_blacklist: tuple[str, ...]
    merge_pipeline_layers: Mapping[str, Any]  # <layer>.<group> -> policy (docs/manifest.md)


@dataclass(frozen=True)
class EntityCacheSettings(TableSettings):
    """The `entity_cache.*` settings."""

    PREFIX = "entity_cache."

    capacity: int
