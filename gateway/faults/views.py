"""JSON shapes of faults: list item, detail and stream event (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .model import FaultRecord, iso, severity_label, status_flags
from .snapshots import freeze_frame


def list_item(xv: str, f: FaultRecord) -> dict[str, Any]:
    """A fault list item: the spec's five fields plus the vendor block."""
    vendor: dict[str, Any] = {
        "status": f.status,
        "severity_level": f.severity,
        "occurrence_count": f.occurrence_count,
        "reporting_sources": list(f.sources),
        "first_occurrence": iso(f.first_ns),
        "last_occurrence": iso(f.last_ns),
    }
    if f.cleared_ns:
        vendor["cleared_at"] = iso(f.cleared_ns)
    return {"fault_code": f.code, "severity": severity_label(f.severity),
            "message": f.description, "timestamp": iso(f.last_ns),
            "source": f.sources[0] if f.sources else "", xv: vendor}


def detail(xv: str, f: FaultRecord, frames: Sequence[Mapping[str, Any]],
           correlation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """GET .../faults/{code}: item, environment_data and the vendor block."""
    vendor: dict[str, Any] = {
        "occurrence_count": f.occurrence_count,
        "reporting_sources": list(f.sources),
        "severity_label": severity_label(f.severity),
        "status": f.status,
    }
    if f.last_passed_ns:
        vendor["last_passed"] = iso(f.last_passed_ns)
    if f.confirmed_ns:
        vendor["confirmed_at"] = iso(f.confirmed_ns)
    if f.cleared_ns:
        vendor["cleared_at"] = iso(f.cleared_ns)
    if correlation:
        vendor["correlation"] = dict(correlation)
    return {
        "item": {"code": f.code, "fault_name": f.description or f.code,
                 "severity": f.severity, "status": status_flags(f.status)},
        "environment_data": {
            "extended_data_records": {"first_occurrence": iso(f.first_ns),
                                      "last_occurrence": iso(f.last_ns)},
            "snapshots": [freeze_frame(xv, fr, iso) for fr in frames],
        },
        xv: vendor,
    }


def event(xv: str, event_type: str, f: FaultRecord, now_ns: int,
          entity: tuple[str, str] | None = None,
          auto_cleared: Sequence[str] = ()) -> dict[str, Any]:
    """Data of one fault stream event; entity is (entity_type, entity_id) at arrival."""
    out: dict[str, Any] = {"event_type": event_type, "fault": list_item(xv, f),
                           "timestamp": iso(now_ns)}
    if auto_cleared:
        out["auto_cleared_codes"] = list(auto_cleared)
    if entity is not None:
        out[xv] = {"entity_type": entity[0], "entity_id": entity[1]}
    return out
