"""The secret values of the resolved settings, registered once so no child process sees them."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from .settings_table import SETTINGS

# A secret shorter than this is matched only as a whole value (a substring test would drop
# half the environment for a 3-letter password).
MIN_SUBSTRING_LEN = 8

_BY_KEY = {s.key: s for s in SETTINGS}
_lock = threading.Lock()
_secrets: set[str] = set()


def register_secrets(values: Iterable[str]) -> None:
    """Add secret values (setting values, parts of client entries) to drop from children."""
    with _lock:
        _secrets.update(v for v in values if v)


def registered_secrets() -> frozenset[str]:
    """Every secret value registered so far."""
    with _lock:
        return frozenset(_secrets)


def secret_values(settings: Any) -> list[str]:
    """Values of the secret settings: each value, and each ':'-part of 8+ characters."""
    out: list[str] = []
    for key, value in settings.as_dict(redact=False).items():
        setting = _BY_KEY.get(key)
        if not (setting is not None and setting.secret):
            continue
        for text in (str(v) for v in (value if isinstance(value, (list, tuple)) else [value])):
            if not text:
                continue
            out.append(text)
            out.extend(part for part in text.split(":") if len(part) >= MIN_SUBSTRING_LEN)
    return out
