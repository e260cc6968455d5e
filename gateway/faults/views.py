"""JSON shapes of faults: delegates to the configured wire profile (gateway/faults/wire.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .model import FaultRecord
from .wire import SpecFaults


def _faults(wire: Any) -> SpecFaults:
    # A bare vendor key (e.g. "x-vendor") renders the spec profile.
    return SpecFaults(wire) if isinstance(wire, str) else wire


def list_item(wire: Any, f: FaultRecord) -> dict[str, Any]:
    """A fault list item in the wire's profile."""
    return _faults(wire).list_item(f)


def detail(wire: Any, f: FaultRecord, frames: Sequence[Mapping[str, Any]],
           correlation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """GET .../faults/{code} in the wire's profile."""
    return _faults(wire).detail(f, frames, correlation)


def event(wire: Any, event_type: str, f: FaultRecord, now_ns: int,
          entity: tuple[str, str] | None = None,
          auto_cleared: Sequence[str] = ()) -> dict[str, Any]:
    """Data of one fault stream event in the wire's profile."""
    return _faults(wire).event(event_type, f, now_ns, entity, auto_cleared)
