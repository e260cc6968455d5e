"""OpenAPI component schemas of the lock routes."""

from __future__ import annotations

from typing import Any

from ..locks.rules import SCOPES

_TS = {"type": "string", "format": "date-time"}
_STR = {"type": "string"}

SCHEMAS: dict[str, Any] = {
    "LockRequest": {
        "type": "object",
        "required": ["lock_expiration"],
        "properties": {
            "lock_expiration": {"type": "number", "exclusiveMinimum": 0,
                                "description": "seconds; capped at the entity's maximum"},
            "scopes": {"type": ["array", "null"], "items": {"enum": list(SCOPES)},
                       "description": "collections covered; empty, null or absent: all"},
            "break_lock": {"type": "boolean", "default": False},
        },
    },
    "LockExtend": {
        "type": "object",
        "required": ["lock_expiration"],
        "properties": {"lock_expiration": {"type": "number", "exclusiveMinimum": 0}},
    },
    "Lock": {
        "type": "object",
        "required": ["id", "owned", "lock_expiration"],
        "properties": {
            "id": _STR, "owned": {"type": "boolean"},
            "scopes": {"type": "array", "items": _STR,
                       "description": "absent when the lock covers every collection"},
            "lock_expiration": _TS,
        },
    },
    "LockList": {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Lock"}}},
    },
}
