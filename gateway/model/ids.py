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


MAX_ID_LENGTH = 256


def invalid_id_reason(entity_id: str) -> str | None:
    """Why an entity id breaks the spec's charset rule (alphanumerics, `_`, `-`); None if fine."""
    if not entity_id:
        return "Entity ID cannot be empty"
    if len(entity_id) > MAX_ID_LENGTH:
        return f"Entity ID too long (max {MAX_ID_LENGTH} characters)"
    bad = _BAD.search(entity_id)
    if bad is None:
        return None
    ch = bad.group(0)[0]
    shown = ch if ch.isprintable() and ord(ch) < 128 else f"0x{ord(ch):02X}"
    return (f"Entity ID contains invalid character: '{shown}'. Only alphanumeric, underscore "
            "and hyphen are allowed")
