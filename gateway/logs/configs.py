"""Each entity's log configuration (severity floor, entry count): the rule and the store."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import bad_request, invalid_parameter
from ..model.entities import Entity
from ..ros.topics.rosout import SEVERITIES

DEFAULT_CONFIG = {"severity_filter": "debug", "max_entries": 100}
MAX_ENTRIES = 10000


def validate_config(body: Any, current: dict[str, Any]) -> dict[str, Any]:
    """The configuration after applying a PUT body; ApiError 400 naming every bad field."""
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object with 'severity_filter' and/or "
                          "'max_entries'")
    if body and not any(k in DEFAULT_CONFIG for k in body):  # a typo must not pass as a no-op
        unknown = ", ".join(sorted(str(k) for k in body)[:5])
        raise bad_request(f"The body names no known field ({unknown}); give 'severity_filter' "
                          "and/or 'max_entries'", fields=sorted(str(k) for k in body)[:20])
    out = dict(current)
    bad: list[tuple[str, str]] = []
    if "severity_filter" in body:
        value = body["severity_filter"]
        if value in SEVERITIES:
            out["severity_filter"] = value
        else:
            bad.append(("severity_filter",
                        f"'severity_filter' must be one of {', '.join(SEVERITIES)}; got {value!r}"))
    if "max_entries" in body:
        value = body["max_entries"]
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema: 100.0 is an integer
        if isinstance(value, bool) or not isinstance(value, int) or not (
                1 <= value <= MAX_ENTRIES):
            bad.append(("max_entries",
                        f"'max_entries' must be an integer from 1 to {MAX_ENTRIES}; "
                        f"got {value!r}"))
        else:
            out["max_entries"] = value
    if bad:
        raise invalid_parameter("; ".join(m for _, m in bad), field=bad[0][0],
                                fields=[{"field": f, "message": m} for f, m in bad])
    return out


class LogConfigurations:
    """Each entity's log configuration (PUT .../logs/configuration), kept in memory."""

    def __init__(self) -> None:
        self.by_entity: dict[tuple[str, str], dict[str, Any]] = {}

    def of(self, entity: Entity) -> dict[str, Any]:
        """The entity's log configuration (defaults until a PUT)."""
        return self.by_entity.get((entity.kind, entity.id), DEFAULT_CONFIG)


LOG_CONFIGURATIONS: web.AppKey[LogConfigurations] = web.AppKey("log_configurations",
                                                                LogConfigurations)
