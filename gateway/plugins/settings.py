"""The plugin settings (`plugins`, `plugin_call_timeout_sec`, `plugins.<name>.*`), read once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class PluginSettings(TableSettings):
    """The plugins to load, their call budget and their own configurations (open keys)."""

    PREFIX = ""
    OPEN = {"configs": "plugins."}

    plugins: tuple[str, ...]
    plugin_call_timeout_sec: float
    configs: Mapping[str, Any]  # every plugins.<name>.* key, without "plugins."

    def config(self, name: str) -> dict[str, Any]:
        """A plugin's own configuration: its `plugins.<name>.*` keys without the prefix."""
        head = name + "."
        return {k[len(head):]: v for k, v in self.configs.items() if k.startswith(head)}
