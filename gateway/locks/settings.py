"""The locks feature's settings as plain values (`locking.*` in the settings table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..settings.config import ConfigError
from .rules import SCOPES

KINDS = ("components", "apps")


@dataclass(frozen=True)
class LockSettings:
    """Everything the lock manager reads from the settings."""

    enabled: bool = True
    default_max_expiration_s: float = 3600.0
    cleanup_interval_s: float = 30.0
    # kind -> (collections a lock is required for, whether its locks may be broken)
    defaults: tuple[tuple[str, tuple[str, ...], bool], ...] = (
        ("components", (), True), ("apps", (), True))

    @classmethod
    def from_settings(cls, s: Any) -> LockSettings:
        """From the resolved gateway settings (ConfigError naming a setting with an unknown
        collection)."""
        for kind in KINDS:
            key = f"locking.defaults.{kind}.lock_required_scopes"
            unknown = [c for c in s[key] if c not in SCOPES]
            if unknown:
                raise ConfigError(f"setting '{key}': unknown collection(s) "
                                  f"{', '.join(unknown)}; valid: {', '.join(SCOPES)}")
        return cls(
            enabled=bool(s["locking.enabled"]),
            default_max_expiration_s=float(s["locking.default_max_expiration"]),
            cleanup_interval_s=float(s["locking.cleanup_interval"]),
            defaults=tuple((kind, tuple(s[f"locking.defaults.{kind}.lock_required_scopes"]),
                            bool(s[f"locking.defaults.{kind}.breakable"])) for kind in KINDS))

    def per_type(self) -> dict[str, tuple[tuple[str, ...], bool]]:
        """kind -> (required collections, breakable)."""
        return {kind: (required, breakable) for kind, required, breakable in self.defaults}
