"""The bus events of fault changes, with the payload fault triggers evaluate (pure)."""

from __future__ import annotations

from typing import Any

from ..events import FAULTS, Event
from .model import FaultRecord, severity_label

# fault stream event type -> bus change word
FAULT_CHANGES = {"fault_confirmed": "created", "fault_updated": "updated",
                 "fault_cleared": "cleared"}


def fault_payload(f: FaultRecord, event_type: str) -> dict[str, Any]:
    """What a fault trigger sees: the fault's fields and the event type."""
    out: dict[str, Any] = {
        "fault_code": f.code, "severity": f.severity, "severity_label": severity_label(f.severity),
        "description": f.description, "first_occurred": f.first_ns / 1e9,
        "last_occurred": f.last_ns / 1e9, "occurrence_count": f.occurrence_count,
        "status": f.status, "reporting_sources": list(f.sources), "event_type": event_type}
    if f.last_passed_ns:
        out["last_passed"] = f.last_passed_ns / 1e9
    return out


def fault_event(f: FaultRecord, event_type: str, entity: tuple[str, str] | None) -> Event:
    """The bus event of one fault change; the entity is the first source's app (else the
    source's last name segment)."""
    if entity is not None:
        entity_id: str | None = entity[1]
    elif f.sources:
        entity_id = f.sources[0].rstrip("/").rsplit("/", 1)[-1] or None
    else:
        entity_id = None
    return Event(FAULTS, entity_id, f.code, FAULT_CHANGES.get(event_type, "updated"),
                 fault_payload(f, event_type))
