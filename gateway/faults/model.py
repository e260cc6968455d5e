"""Fault records, reports and the status tables of the debounce lifecycle (pure)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

INFO, WARN, ERROR, CRITICAL = 0, 1, 2, 3
SEVERITY_LABELS = {INFO: "INFO", WARN: "WARN", ERROR: "ERROR", CRITICAL: "CRITICAL"}

FAILED, PASSED = "FAILED", "PASSED"

PREFAILED, PREPASSED = "PREFAILED", "PREPASSED"
CONFIRMED, HEALED, CLEARED = "CONFIRMED", "HEALED", "CLEARED"
STATUSES = (PREFAILED, PREPASSED, CONFIRMED, HEALED, CLEARED)

# internal status -> (aggregatedStatus, testFailed, confirmedDTC, pendingDTC)
STATUS_FLAGS: dict[str, tuple[str, str, str, str]] = {
    CONFIRMED: ("active", "1", "1", "0"),
    PREFAILED: ("passive", "1", "0", "1"),
    PREPASSED: ("passive", "0", "0", "1"),
    HEALED: ("cleared", "0", "0", "0"),
    CLEARED: ("cleared", "0", "0", "0"),
}

# ?status= values -> internal statuses; the default list shows PREFAILED and CONFIRMED.
STATUS_FILTERS: dict[str, frozenset[str]] = {
    "pending": frozenset({PREFAILED, PREPASSED}),
    "confirmed": frozenset({CONFIRMED}),
    "cleared": frozenset({CLEARED}),
    "healed": frozenset({HEALED}),
    "all": frozenset(STATUSES),
}
DEFAULT_FILTER = frozenset({PREFAILED, CONFIRMED})


def severity_label(severity: int) -> str:
    """INFO, WARN, ERROR or CRITICAL (out-of-range values are clamped)."""
    return SEVERITY_LABELS[min(max(int(severity), INFO), CRITICAL)]


def status_flags(status: str) -> dict[str, str]:
    """The SOVD status object of an internal status."""
    agg, failed, confirmed, pending = STATUS_FLAGS[status]
    return {"aggregatedStatus": agg, "testFailed": failed, "confirmedDTC": confirmed,
            "pendingDTC": pending}


def parse_status_filter(value: str | None) -> frozenset[str] | None:
    """Statuses selected by a ?status= value (comma-separated); None when a word is unknown."""
    if value is None or value == "":
        return DEFAULT_FILTER
    out: set[str] = set()
    for word in value.split(","):
        selected = STATUS_FILTERS.get(word.strip().lower())
        if selected is None:
            return None
        out |= selected
    return frozenset(out)


@dataclass(frozen=True)
class Report:
    """One FAILED or PASSED report of a fault code by a source (a node's full name)."""

    code: str
    event: str
    severity: int = ERROR
    description: str = ""
    source: str = ""


@dataclass
class FaultRecord:
    """A fault as the manager keeps it: one per code, sources merged."""

    code: str
    severity: int
    description: str
    status: str
    counter: int
    occurrence_count: int
    first_ns: int
    last_ns: int
    last_passed_ns: int = 0
    confirmed_ns: int = 0
    cleared_ns: int = 0
    sources: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        """True unless cleared or healed."""
        return self.status not in (CLEARED, HEALED)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for storage."""
        return asdict(self)

    def to_json(self) -> bytes:
        """to_dict() as JSON (orjson writes dataclass fields directly: no dict copy)."""
        return orjson.dumps(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FaultRecord:
        """Inverse of to_dict (unknown keys ignored)."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})
