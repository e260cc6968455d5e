"""Lifecycle control plans: which lifecycle_msgs transitions take a managed node where (pure).

start = configure and activate as needed; restart = back to unconfigured, then configure and
activate; shutdown = deactivate, clean up, then shut down (finalized); force-shutdown = the
direct shutdown transition from the current state (no deactivate or cleanup callbacks);
force-restart = restart's steps, taken even while another transition of the node runs (that
one is abandoned).
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN, UNCONFIGURED, INACTIVE, ACTIVE, FINALIZED = 0, 1, 2, 3, 4
LABELS = {0: "unknown", 1: "unconfigured", 2: "inactive", 3: "active", 4: "finalized"}

# lifecycle_msgs/msg/Transition ids and labels
CONFIGURE, CLEANUP, ACTIVATE, DEACTIVATE = 1, 2, 3, 4
UNCONFIGURED_SHUTDOWN, INACTIVE_SHUTDOWN, ACTIVE_SHUTDOWN = 5, 6, 7
STEP_LABELS = {1: "configure", 2: "cleanup", 3: "activate", 4: "deactivate",
               5: "unconfigured_shutdown", 6: "inactive_shutdown", 7: "active_shutdown"}

START, RESTART, SHUTDOWN, FORCE_SHUTDOWN = "start", "restart", "shutdown", "force-shutdown"
FORCE_RESTART = "force-restart"
TRANSITIONS = (START, RESTART, FORCE_RESTART, SHUTDOWN, FORCE_SHUTDOWN)


class PlanError(Exception):
    """The node's state does not allow the transition (precondition not fulfilled)."""


@dataclass(frozen=True)
class Step:
    """One ChangeState call and the primary state it leads to."""

    transition_id: int
    label: str
    goal: int


def _steps(*ids: int) -> list[Step]:
    goal = {CONFIGURE: INACTIVE, CLEANUP: UNCONFIGURED, ACTIVATE: ACTIVE, DEACTIVATE: INACTIVE,
            UNCONFIGURED_SHUTDOWN: FINALIZED, INACTIVE_SHUTDOWN: FINALIZED,
            ACTIVE_SHUTDOWN: FINALIZED}
    return [Step(i, STEP_LABELS[i], goal[i]) for i in ids]


def plan(transition: str, state: int) -> list[Step]:
    """The ChangeState calls that perform `transition` from primary state `state`."""
    if transition not in TRANSITIONS:
        raise ValueError(f"unknown lifecycle transition {transition!r}")
    if state not in (UNCONFIGURED, INACTIVE, ACTIVE, FINALIZED):
        raise PlanError(f"the node is in state {state} (between primary states); try again "
                        "once its current transition finished")
    if state == FINALIZED:
        if transition in (SHUTDOWN, FORCE_SHUTDOWN):
            return []
        raise PlanError("the node is finalized: a finalized lifecycle node cannot be started "
                        "again; restart its process")
    if transition == START:
        return {UNCONFIGURED: _steps(CONFIGURE, ACTIVATE), INACTIVE: _steps(ACTIVATE),
                ACTIVE: []}[state]
    if transition in (RESTART, FORCE_RESTART):
        return {UNCONFIGURED: _steps(CONFIGURE, ACTIVATE),
                INACTIVE: _steps(CLEANUP, CONFIGURE, ACTIVATE),
                ACTIVE: _steps(DEACTIVATE, CLEANUP, CONFIGURE, ACTIVATE)}[state]
    if transition == SHUTDOWN:
        return {UNCONFIGURED: _steps(UNCONFIGURED_SHUTDOWN),
                INACTIVE: _steps(CLEANUP, UNCONFIGURED_SHUTDOWN),
                ACTIVE: _steps(DEACTIVATE, CLEANUP, UNCONFIGURED_SHUTDOWN)}[state]
    return {UNCONFIGURED: _steps(UNCONFIGURED_SHUTDOWN), INACTIVE: _steps(INACTIVE_SHUTDOWN),
            ACTIVE: _steps(ACTIVE_SHUTDOWN)}[state]
