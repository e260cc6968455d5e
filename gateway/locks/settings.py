"""The locks feature's settings (`locking.*` in the settings table), read once."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.config import ConfigError
from ..settings.typed import TableSettings
from .rules import SCOPES


@dataclass(frozen=True)
class LockSettings(TableSettings):
    """Everything the lock manager reads from the settings (ConfigError at build naming a
    `lock_required_scopes` with an unknown collection)."""

    PREFIX = "locking."

    enabled: bool
    default_max_expiration: int
    cleanup_interval: float
    defaults_components_lock_required_scopes: tuple[str, ...]
    defaults_apps_lock_required_scopes: tuple[str, ...]
    defaults_components_breakable: bool
    defaults_apps_breakable: bool

    def __post_init__(self) -> None:
        for kind, (required, _) in self.per_type().items():
            unknown = [c for c in required if c not in SCOPES]
            if unknown:
                raise ConfigError(f"setting 'locking.defaults.{kind}.lock_required_scopes': "
                                  f"unknown collection(s) {', '.join(unknown)}; valid: "
                                  f"{', '.join(SCOPES)}")

    @property
    def default_max_expiration_s(self) -> float:
        """The longest lock, in seconds."""
        return float(self.default_max_expiration)

    @property
    def cleanup_interval_s(self) -> float:
        """Seconds between sweeps of expired locks."""
        return self.cleanup_interval

    @property
    def defaults(self) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
        """(kind, collections a lock is required for, whether its locks may be broken)."""
        return tuple((kind, required, breakable)
                     for kind, (required, breakable) in self.per_type().items())

    def per_type(self) -> dict[str, tuple[tuple[str, ...], bool]]:
        """kind -> (required collections, breakable)."""
        return {"components": (self.defaults_components_lock_required_scopes,
                               self.defaults_components_breakable),
                "apps": (self.defaults_apps_lock_required_scopes, self.defaults_apps_breakable)}
