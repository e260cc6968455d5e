"""Log entries: the entry id."""

from __future__ import annotations

from typing import Any

from ..wire._base import WireBase


class SpecLogs(WireBase):
    """The spec's entries: the id is the entry's sequence number."""

    def entry(self, item: dict[str, Any]) -> dict[str, Any]:
        """The entry as sent."""
        return item


class MedkitLogs(SpecLogs):
    """The reference's entry ids: `log_<n>`."""

    profile = "medkit"

    def entry(self, item: dict[str, Any]) -> dict[str, Any]:
        """The entry with its id prefixed `log_`."""
        item["id"] = f"log_{item['id']}"
        return item


LogWire = SpecLogs
LOGS: dict[str, type[SpecLogs]] = {"spec": SpecLogs, "medkit": MedkitLogs}
