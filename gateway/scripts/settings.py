"""The scripts feature's settings (`scripts.*` in the settings table), read once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..settings.typed import TableSettings

if TYPE_CHECKING:
    from ..settings.config import Settings


@dataclass(frozen=True)
class ScriptKeys(TableSettings):
    """The `scripts.*` settings as the table holds them."""

    PREFIX = "scripts."

    scripts_dir: str
    allow_uploads: bool
    allow_anonymous: bool
    run_as_user: str
    allow_root: bool
    upload_dir: str
    max_file_size_mb: int
    max_concurrent_executions: int
    default_timeout_sec: int
    max_execution_history: int
    stop_grace_sec: float
    max_output_bytes: int


@dataclass(frozen=True)
class ScriptSettings:
    """Everything the script service and the upload routes read from the settings (also for
    the scripts a plugin serves: uploads, their size and anonymous callers)."""

    scripts_dir: Path | None = None  # None: no backend, the routes answer 501
    allow_uploads: bool = True
    allow_anonymous: bool = False
    run_as_user: str = ""
    allow_root: bool = False
    upload_dir: Path | None = None  # None: <state_dir>/scripts
    max_file_bytes: int = 10 * 1024 * 1024
    max_concurrent_executions: int = 5
    default_timeout_s: float = 300.0
    max_execution_history: int = 100
    stop_grace_s: float = 5.0
    max_output_bytes: int = 1048576

    @classmethod
    def from_settings(cls, s: Settings) -> ScriptSettings:
        """From the resolved gateway settings (their ranges are checked at load)."""
        k = s.typed(ScriptKeys.from_settings)

        def path(text: str) -> Path | None:
            return Path(text).expanduser() if text else None

        return cls(
            scripts_dir=path(k.scripts_dir), allow_uploads=k.allow_uploads,
            allow_anonymous=k.allow_anonymous, run_as_user=k.run_as_user,
            allow_root=k.allow_root, upload_dir=path(k.upload_dir),
            max_file_bytes=k.max_file_size_mb * 1024 * 1024,
            max_concurrent_executions=k.max_concurrent_executions,
            default_timeout_s=float(k.default_timeout_sec),
            max_execution_history=k.max_execution_history, stop_grace_s=k.stop_grace_sec,
            max_output_bytes=k.max_output_bytes)
