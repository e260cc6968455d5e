"""The bus events of fault changes: what the recorder and fault triggers read of each (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..events import FAULTS, Event, Payload
from .batch import FaultBatch
from .model import FaultRecord, severity_label

# fault stream event type -> bus change word
FAULT_CHANGES = {"fault_confirmed": "created", "fault_updated": "updated",
                 "fault_cleared": "cleared"}
QUIET = "changed"  # the change word of a change the fault stream does not show


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


@dataclass(frozen=True)
class FaultChange(Payload):
    """One committed fault change: the fault as committed, whether it was confirmed now, and
    the fault stream's event type (None: a change the stream does not show, muted or silent)."""

    fault: FaultRecord
    confirmed_now: bool
    event_type: str | None

    def body(self) -> dict[str, Any] | None:
        """What a fault trigger evaluates; None for a change the stream does not show."""
        return None if self.event_type is None else fault_payload(self.fault, self.event_type)


def fault_event(f: FaultRecord, event_type: str | None, entity: tuple[str, str] | None,
                confirmed_now: bool) -> Event[FaultChange]:
    """The bus event of one fault change; the entity is the first source's app (else the
    source's last name segment)."""
    if entity is not None:
        entity_id: str | None = entity[1]
    elif f.sources:
        entity_id = f.sources[0].rstrip("/").rsplit("/", 1)[-1] or None
    else:
        entity_id = None
    change = QUIET if event_type is None else FAULT_CHANGES.get(event_type, "updated")
    return Event(FAULTS, entity_id, f.code, change, FaultChange(f, confirmed_now, event_type))


def batch_events(batch: FaultBatch, faults: Mapping[str, FaultRecord],
                 entity_of: Callable[[FaultRecord], tuple[str, str] | None],
                 ) -> Iterator[Event[FaultChange]]:
    """A committed batch's bus events: one per stream event, in stream order, then one per
    changed fault the stream does not show (muted, or a change no event names)."""
    shown: set[str] = set()
    for event_type, code, _auto in batch.events:
        shown.add(code)
        fault = faults[code]
        yield fault_event(fault, event_type, entity_of(fault), event_type == "fault_confirmed")
    captured = set(batch.captures)
    for code, fault in batch.changed.items():
        if code not in shown:
            yield fault_event(fault, None, entity_of(fault), code in captured)
