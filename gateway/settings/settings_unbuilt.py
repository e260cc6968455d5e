"""Settings of features this build does not have: refused at load time, naming the feature.

A key declared in settings_table.SETTINGS always wins over this table, so a feature that gets built
declares its settings there and needs no change here. `<name>` stands for one dotted
segment, a trailing `.*` for any number of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# (key or pattern, feature)
UNBUILT_SETTINGS: tuple[tuple[str, str], ...] = (
    # locks
    ("locking.enabled", "locks"),
    ("locking.default_max_expiration", "locks"),
    ("locking.cleanup_interval", "locks"),
    ("locking.defaults.components.lock_required_scopes", "locks"),
    ("locking.defaults.components.breakable", "locks"),
    ("locking.defaults.apps.lock_required_scopes", "locks"),
    ("locking.defaults.apps.breakable", "locks"),
    ("locking.*", "locks"),
    # scripts
    ("scripts.scripts_dir", "scripts"),
    ("scripts.allow_uploads", "scripts"),
    ("scripts.max_file_size_mb", "scripts"),
    ("scripts.max_concurrent_executions", "scripts"),
    ("scripts.default_timeout_sec", "scripts"),
    ("scripts.max_execution_history", "scripts"),
    ("scripts.*", "scripts"),
    # triggers
    ("triggers.enabled", "triggers"),
    ("triggers.max_triggers", "triggers"),
    ("triggers.on_restart_behavior", "triggers"),
    ("triggers.storage.path", "triggers"),
    ("triggers.*", "triggers"),
    # fault triggers
    ("fault_triggers.enabled", "fault-triggers"),
    ("fault_triggers.poll_interval_ms", "fault-triggers"),
    ("fault_triggers.storage.path", "fault-triggers"),
    ("fault_triggers.*", "fault-triggers"),
    # software updates (an update provider plugin)
    ("updates.*", "updates"),
    # plugins and what only plugins provide
    ("plugins", "plugins"),
    ("plugins.<name>.*", "plugins"),
    ("lifecycle.*", "lifecycle"),
    # manifest and inventory discovery
    ("discovery.manifest.enabled", "manifest"),
    ("discovery.manifest.fragments_dir", "manifest"),
    ("discovery.manifest_strict_validation", "manifest"),
    ("discovery.inventory.csv_path", "manifest"),
    ("discovery.runtime.enabled", "manifest"),
    ("discovery.merge_pipeline.gap_fill.allow_heuristic_apps", "manifest"),
    ("discovery.merge_pipeline.gap_fill.allow_heuristic_functions", "manifest"),
    ("discovery.merge_pipeline.gap_fill.namespace_whitelist", "manifest"),
    ("discovery.merge_pipeline.gap_fill.namespace_blacklist", "manifest"),
    ("discovery.merge_pipeline.layers.<layer>.<group>", "manifest"),
    ("discovery.merge_pipeline.*", "manifest"),
    # entity-level freeze frames
    ("entity_freeze_frame.enabled", "entity-freeze-frame"),
    ("entity_freeze_frame.*", "entity-freeze-frame"),
)


def pattern(key: str) -> re.Pattern[str]:
    """The regex of a table key: `<x>` one dotted segment, a trailing `.*` any more."""
    rx = re.escape(key).replace(r"\.\*", r"\..+")
    rx = re.sub(r"<[a-z_]+>", r"[^.]+", rx)
    return re.compile(rx)


_COMPILED = tuple((pattern(key), feature) for key, feature in UNBUILT_SETTINGS)


def built_features(declared: Iterable[str]) -> frozenset[str]:
    """Features of this table that declare at least one of their keys in SETTINGS."""
    keys = list(declared)
    return frozenset(feature for rx, feature in _COMPILED if any(rx.fullmatch(k) for k in keys))


def unbuilt_feature(key: str, declared: Iterable[str]) -> str | None:
    """The feature a setting belongs to when this build lacks it, else None.

    A feature counts as built once SETTINGS declares any of its keys: its other keys are
    then plain unknown settings (refused with a suggestion), not a missing feature.
    """
    built = built_features(declared)
    for rx, feature in _COMPILED:
        if feature not in built and rx.fullmatch(key):
            return feature
    return None


def unbuilt_keys() -> list[str]:
    """The concrete keys of the table (suggestion candidates)."""
    return [key for key, _ in UNBUILT_SETTINGS if "*" not in key and "<" not in key]
