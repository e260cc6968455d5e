"""The MCP server settings (`mcp.*`), read once into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class McpSettings(TableSettings):
    """The `mcp.*` settings."""

    PREFIX = "mcp."

    enabled: bool
    page_size: int
    request_timeout_sec: float
