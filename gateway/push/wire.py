"""Cyclic subscription payloads: the key holding a whole collection's items."""

from __future__ import annotations

from typing import Any

from ..wire._base import WireBase

# Keys a relayed payload may hold a collection's items under (a peer of either profile).
_ITEM_KEYS = ("items", "data")


def payload_items(payload: Any) -> list[Any] | None:
    """A relayed collection payload's items (under `items` or `data`), else None."""
    if not isinstance(payload, dict):
        return None
    for key in _ITEM_KEYS:
        value = payload.get(key)
        if isinstance(value, list):
            return value
    return None


class SpecPush(WireBase):
    """The spec's payload of a whole collection: `{id, data: [...]}`."""

    items_key = "data"

    def collection_payload(self, collection: str, items: list[Any]) -> dict[str, Any]:
        """The `payload` of one tick of a collection streamed as a whole."""
        return {"id": collection, self.items_key: items}


class MedkitPush(SpecPush):
    """The reference's payload of a whole collection: `{id, items: [...]}`."""

    profile = "medkit"
    items_key = "items"


PushWire = SpecPush
PUSH: dict[str, type[SpecPush]] = {"spec": SpecPush, "medkit": MedkitPush}
