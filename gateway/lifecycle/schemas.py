"""OpenAPI component schemas of the lifecycle routes."""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}

SCHEMAS: dict[str, Any] = {
    "LifecycleTransition": {
        "type": "object",
        "required": ["id", "transition", "status"],
        "properties": {
            "id": _STR, "transition": {"enum": ["start", "restart", "force-restart",
                                                "shutdown", "force-shutdown"]},
            "status": {"enum": ["inProgress", "completed", "failed"]},
            "apps": {"type": "array", "items": {"type": "object"}},
        },
    },
}
