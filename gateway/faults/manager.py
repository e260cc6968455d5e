"""The debounce lifecycle of a fault, as pure functions of (record, report, now)."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from .model import (
    CLEARED,
    CONFIRMED,
    CRITICAL,
    FAILED,
    HEALED,
    PASSED,
    PREFAILED,
    PREPASSED,
    FaultRecord,
    Report,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DebounceConfig:
    """Debounce settings (facts.md defaults)."""

    confirmation_threshold: int = -1
    healing_enabled: bool = False
    healing_threshold: int = 3
    critical_immediate_confirm: bool = True
    auto_confirm_after_sec: float = 0.0

    def validated(self) -> DebounceConfig:
        """Thresholds valid only when confirmation < 0 <= healing; else reset to -1 / 3."""
        if self.confirmation_threshold < 0 <= self.healing_threshold:
            return self
        log.warning(
            "settings 'faults.confirmation_threshold' (%d) and 'faults.healing_threshold' (%d) "
            "must satisfy confirmation < 0 <= healing; using -1 and 3",
            self.confirmation_threshold, self.healing_threshold)
        return dataclasses.replace(self, confirmation_threshold=-1, healing_threshold=3)


@dataclass(frozen=True)
class Change:
    """What one report did to a fault."""

    before: str | None  # status before (None: the fault is new)
    after: str
    reactivated: bool = False
    visible_change: bool = False  # severity, description or sources changed

    @property
    def onset(self) -> bool:
        """A new occurrence started (new fault or reactivation)."""
        return self.before is None or self.reactivated

    @property
    def confirmed(self) -> bool:
        """The fault became CONFIRMED with this report."""
        return self.after == CONFIRMED and self.before != CONFIRMED

    @property
    def cleared(self) -> bool:
        """The fault left the active states (healed) with this report."""
        return self.after in (CLEARED, HEALED) and self.before not in (CLEARED, HEALED, None)


def _status(fault: FaultRecord, cfg: DebounceConfig) -> str:
    """facts.md status order: confirm, heal, latch, sign of the counter, unchanged."""
    c = fault.counter
    if c <= cfg.confirmation_threshold:
        return CONFIRMED
    if cfg.healing_enabled and c >= cfg.healing_threshold:
        return HEALED
    if fault.status in (CONFIRMED, HEALED):
        return fault.status
    if c < 0:
        return PREFAILED
    if c > 0:
        return PREPASSED
    return fault.status


def _add_source(fault: FaultRecord, source: str) -> bool:
    if source and source not in fault.sources:
        fault.sources.append(source)
        return True
    return False


def apply(fault: FaultRecord | None, report: Report, now_ns: int,
          cfg: DebounceConfig) -> tuple[FaultRecord | None, Change | None]:
    """Apply one report; returns the (mutated or new) record and the change, or (x, None)."""
    critical = report.event == FAILED and cfg.critical_immediate_confirm and (
        report.severity >= CRITICAL)
    if fault is None:
        if report.event != FAILED:
            return None, None  # PASSED for an unknown code is ignored
        fault = FaultRecord(
            code=report.code, severity=report.severity, description=report.description,
            status=PREFAILED, counter=-1, occurrence_count=1, first_ns=now_ns, last_ns=now_ns,
            sources=[report.source] if report.source else [])
        fault.status = CONFIRMED if critical else _status(fault, cfg)
        if fault.status == CONFIRMED:
            fault.confirmed_ns = now_ns
        return fault, Change(None, fault.status)
    before = fault.status
    if before == CLEARED:
        if report.event != FAILED:
            return fault, None  # PASSED on a CLEARED fault is ignored
        fault.counter = -1
        fault.first_ns = fault.last_ns = now_ns
        fault.occurrence_count += 1
        fault.severity = report.severity
        if report.description:
            fault.description = report.description
        _add_source(fault, report.source)
        fault.cleared_ns = 0
        fault.status = PREFAILED  # CLEARED is not latched: the counter decides
        fault.status = CONFIRMED if critical else _status(fault, cfg)
        if fault.status == CONFIRMED:
            fault.confirmed_ns = now_ns
        return fault, Change(before, fault.status, reactivated=True)
    fault.counter = min(max(fault.counter, cfg.confirmation_threshold), cfg.healing_threshold)
    visible = False
    if report.event == FAILED:
        fault.counter -= 1
        fault.last_ns = now_ns
        visible |= _add_source(fault, report.source)
        if report.severity > fault.severity:
            fault.severity = report.severity
            visible = True
        if report.description and report.description != fault.description:
            fault.description = report.description
            visible = True
    elif report.event == PASSED:
        fault.counter += 1
        fault.last_passed_ns = now_ns
    else:
        return fault, None
    fault.status = CONFIRMED if critical else _status(fault, cfg)
    if fault.status == CONFIRMED and before != CONFIRMED:
        fault.confirmed_ns = now_ns
    if fault.status == HEALED and before != HEALED:
        fault.cleared_ns = now_ns
    return fault, Change(before, fault.status, visible_change=visible)


def auto_confirm(fault: FaultRecord, now_ns: int, cfg: DebounceConfig) -> Change | None:
    """Confirm a PREFAILED fault older than auto_confirm_after_sec (when that is > 0)."""
    if cfg.auto_confirm_after_sec <= 0 or fault.status != PREFAILED:
        return None
    if now_ns - fault.first_ns < cfg.auto_confirm_after_sec * 1e9:
        return None
    fault.status = CONFIRMED
    fault.confirmed_ns = now_ns
    return Change(PREFAILED, CONFIRMED)


def clear(fault: FaultRecord, now_ns: int) -> Change | None:
    """Clear a fault (DELETE); None when it was already cleared."""
    if fault.status == CLEARED:
        return None
    before = fault.status
    fault.status = CLEARED
    fault.counter = 0
    fault.cleared_ns = now_ns
    return Change(before, CLEARED)

