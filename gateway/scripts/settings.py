"""The scripts feature's settings as plain values (`scripts.*` in the settings table)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
    def from_settings(cls, s: Any) -> ScriptSettings:
        """From the resolved gateway settings (their ranges are checked at load)."""
        def path(key: str) -> Path | None:
            return Path(s[key]).expanduser() if s[key] else None

        return cls(
            scripts_dir=path("scripts.scripts_dir"),
            allow_uploads=bool(s["scripts.allow_uploads"]),
            allow_anonymous=bool(s["scripts.allow_anonymous"]),
            run_as_user=str(s["scripts.run_as_user"]),
            allow_root=bool(s["scripts.allow_root"]),
            upload_dir=path("scripts.upload_dir"),
            max_file_bytes=int(float(s["scripts.max_file_size_mb"]) * 1024 * 1024),
            max_concurrent_executions=int(s["scripts.max_concurrent_executions"]),
            default_timeout_s=float(s["scripts.default_timeout_sec"]),
            max_execution_history=int(s["scripts.max_execution_history"]),
            stop_grace_s=float(s["scripts.stop_grace_sec"]),
            max_output_bytes=int(s["scripts.max_output_bytes"]))
