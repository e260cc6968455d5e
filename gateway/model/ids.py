"""Entity and item ids: sanitizing names and `<member>:<item>` qualification."""

from __future__ import annotations

import re

_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def sanitize(name: str) -> str:
    """An entity id from any name: alphanumerics, underscore and hyphen only."""
    out = _BAD.sub("_", name).strip("_")
    return out or "unnamed"


def qualify(member_id: str, item_id: str) -> str:
    """`<member>:<item>` for an item that clashes with another member's."""
    return f"{member_id}:{item_id}"


def split_qualified(item_id: str) -> tuple[str | None, str]:
    """Split on the first colon: (member, item), or (None, item) when unqualified."""
    member, sep, rest = item_id.partition(":")
    if not sep:
        return None, item_id
    return member, rest
