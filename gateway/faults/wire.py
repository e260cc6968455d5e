"""Fault shapes: list item, list vendor block, detail and stream event."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ApiError, invalid_parameter
from ..model.timestamps import iso
from ..wire._base import WireBase
from ..wire.entities import aggregation
from .model import FaultRecord, severity_label, status_flags
from .snapshots import freeze_frame

ALLOWED_STATUS = "pending, confirmed, cleared, healed, all"
PLURAL = {"app": "apps", "component": "components", "area": "areas", "function": "functions"}


def seconds(ns: int) -> float:
    """Epoch nanoseconds as float epoch seconds."""
    return ns / 1e9


class SpecFaults(WireBase):
    """The spec's fault shapes plus every field the reference's clients read beside them."""

    def severity(self, f: FaultRecord) -> Any:
        """The list item's `severity`: the spec's label string."""
        return severity_label(f.severity)

    def event_timestamp(self, now_ns: int) -> Any:
        """A stream event's `timestamp`: ISO 8601."""
        return iso(now_ns)

    def event_entity_type(self, entity_type: str) -> str:
        """The entity type word of a stream event as resolved (singular)."""
        return entity_type

    def list_item(self, f: FaultRecord) -> dict[str, Any]:
        """A fault list item: the spec's five fields, the reference's top-level fields, vendor block."""
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
        out: dict[str, Any] = {
            "fault_code": f.code, "severity": self.severity(f), "message": f.description,
            "timestamp": iso(f.last_ns), "source": f.sources[0] if f.sources else "",
            # coexisting reference fields (float epoch seconds, raw status)
            "severity_label": severity_label(f.severity), "description": f.description,
            "first_occurred": seconds(f.first_ns), "last_occurred": seconds(f.last_ns),
            "status": f.status, "reporting_sources": list(f.sources),
            "occurrence_count": f.occurrence_count,
        }
        if f.last_passed_ns:
            out["last_passed"] = seconds(f.last_passed_ns)
        out[self.xv] = vendor
        return out

    def list_vendor(self, count: int, entity: Any = None, es: Any = None,
                    **extra: Any) -> dict[str, Any]:
        """Vendor block of a fault list: total_count and count, and the entity's scope."""
        xv: dict[str, Any] = {"total_count": count, "count": count}
        if entity is not None:
            xv["entity_id"] = entity.id
            if entity.kind == "apps":
                xv["source_id"] = entity.node_fqn or entity.id
            elif es is not None:
                xv.update(aggregation(entity, es))
        xv.update(extra)
        return xv

    def detail(self, f: FaultRecord, frames: Sequence[Mapping[str, Any]],
               correlation: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """GET .../faults/{code}: item, environment_data and the vendor block."""
        vendor: dict[str, Any] = {
            "occurrence_count": f.occurrence_count,
            "reporting_sources": list(f.sources),
            "severity_label": severity_label(f.severity),
            "status": f.status,
            "status_raw": f.status,
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
                "snapshots": [freeze_frame(self.xv, fr, iso) for fr in frames],
            },
            self.xv: vendor,
        }

    def event(self, event_type: str, f: FaultRecord, now_ns: int,
              entity: tuple[str, str] | None = None,
              auto_cleared: Sequence[str] = ()) -> dict[str, Any]:
        """Data of one fault stream event; entity is (entity_type, entity_id) at arrival."""
        out: dict[str, Any] = {"event_type": event_type, "fault": self.list_item(f),
                               "timestamp": self.event_timestamp(now_ns)}
        if auto_cleared:
            out["auto_cleared_codes"] = list(auto_cleared)
        if entity is not None:
            out[self.xv] = {"entity_type": self.event_entity_type(entity[0]),
                            "entity_id": entity[1]}
        return out

    def bad_status_filter(self, value: str | None) -> ApiError:
        """400 for a ?status= value naming no status (the reference's wording)."""
        return invalid_parameter("Invalid status parameter value", allowed_values=ALLOWED_STATUS,
                                 parameter="status", value=value)


class MedkitFaults(SpecFaults):
    """The reference's integer severity, float event timestamp and plural entity type."""

    profile = "medkit"

    def severity(self, f: FaultRecord) -> Any:
        """Integer severity 0-3 (INFO, WARN, ERROR, CRITICAL)."""
        return int(f.severity)

    def event_timestamp(self, now_ns: int) -> Any:
        """Float epoch seconds."""
        return seconds(now_ns)

    def event_entity_type(self, entity_type: str) -> str:
        """The plural collection word (apps)."""
        return PLURAL.get(entity_type, entity_type)


FaultWire = SpecFaults
FAULTS: dict[str, type[SpecFaults]] = {"spec": SpecFaults, "medkit": MedkitFaults}
