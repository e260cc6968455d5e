"""Update package status and phase: the transitions of the spec's state table (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

# status values
PENDING, IN_PROGRESS, COMPLETED, FAILED = "pending", "inProgress", "completed", "failed"
# x-vendor.phase values
NONE, PREPARING, PREPARED, EXECUTING, EXECUTED, DELETING = (
    "none", "preparing", "prepared", "executing", "executed", "deleting")
PHASE_FAILED = "failed"

PREPARE, EXECUTE, AUTOMATED, DELETE = "prepare", "execute", "automated", "delete"


class TransitionError(Exception):
    """A refused transition: HTTP status, vendor code and message."""

    def __init__(self, status: int, vendor_code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.vendor_code = vendor_code
        self.message = message


@dataclass(frozen=True)
class UpdateStatus:
    """The status resource of one package."""

    status: str = PENDING
    phase: str = NONE
    progress: int | None = None
    sub_progress: tuple[tuple[str, int], ...] = ()
    error: str | None = None
    running: bool = False  # a prepare, execute, automated or delete task is under way
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def body(self, xv: str) -> dict[str, Any]:
        """The status body: status, progress, sub_progress, error, x-vendor.phase."""
        out: dict[str, Any] = {"status": self.status}
        if self.progress is not None:
            out["progress"] = self.progress
        if self.sub_progress:
            out["sub_progress"] = [{"name": n, "progress": p} for n, p in self.sub_progress]
        if self.error is not None:
            out["error"] = {"error_code": "vendor-error", "message": self.error}
        out[xv] = {"phase": self.phase}
        return out


def begin(current: UpdateStatus, op: str, automated_supported: bool = True) -> UpdateStatus:
    """The status when op starts; TransitionError when the table refuses it."""
    if current.running or current.phase == DELETING:
        raise TransitionError(409, "x-vendor-update-in-progress",
                              f"An operation is in progress on this package (phase "
                              f"'{current.phase}'); wait for it to finish")
    if op == PREPARE:
        return UpdateStatus(PENDING, PREPARING, 0, (), None, True)
    if op == EXECUTE:
        if current.phase != PREPARED:
            raise TransitionError(400, "x-vendor-update-not-prepared",
                                  f"The package is not prepared (phase '{current.phase}'); "
                                  "PUT .../prepare first")
        return UpdateStatus(IN_PROGRESS, EXECUTING, 0, (), None, True)
    if op == AUTOMATED:
        if not automated_supported:
            raise TransitionError(400, "x-vendor-update-not-automated",
                                  "This package does not support automated mode")
        return UpdateStatus(PENDING, PREPARING, 0, (), None, True)
    if op == DELETE:
        return replace(current, phase=DELETING, running=True)
    raise ValueError(f"unknown operation {op!r}")


def started(current: UpdateStatus) -> UpdateStatus:
    """The background task picked the operation up: inProgress."""
    return replace(current, status=IN_PROGRESS)


def executing(current: UpdateStatus) -> UpdateStatus:
    """Automated mode: prepare succeeded, execute begins (progress reset)."""
    return replace(current, status=IN_PROGRESS, phase=EXECUTING, progress=0, sub_progress=(),
                   running=True)


def succeeded(current: UpdateStatus) -> UpdateStatus:
    """The running step finished: completed with phase prepared or executed."""
    phase = PREPARED if current.phase == PREPARING else EXECUTED
    return replace(current, status=COMPLETED, phase=phase, progress=100, running=False,
                   error=None)


def failed(current: UpdateStatus, message: str) -> UpdateStatus:
    """The running step failed."""
    return replace(current, status=FAILED, phase=PHASE_FAILED, running=False, error=message)


def progressed(current: UpdateStatus, percent: int | None = None,
               sub: list[dict[str, Any]] | None = None) -> UpdateStatus:
    """A progress report from the provider (clamped to 0..100)."""
    out = current
    if percent is not None:
        out = replace(out, progress=min(max(int(percent), 0), 100))
    if sub is not None:
        out = replace(out, sub_progress=tuple(
            (str(i.get("name", "")), min(max(int(i.get("progress", 0)), 0), 100))
            for i in sub if isinstance(i, dict)))
    return out
