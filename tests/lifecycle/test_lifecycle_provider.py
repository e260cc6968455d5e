"""The lifecycle provider's background transitions with a scripted service caller (no ROS)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.lifecycle.plans import ACTIVE, FINALIZED, UNCONFIGURED
from gateway.lifecycle.provider import (
    COMPLETED,
    FAILED,
    IN_PROGRESS,
    Busy,
    LifecycleProvider,
    PlanError,
    Unavailable,
)
from gateway.ros.calls.services import CallTimeout


class Caller:
    """Answers GetState with `state`; ChangeState with `accept` (after `gate`, when set)."""

    def __init__(self, state: int, accept: bool = True) -> None:
        self.state, self.accept = state, accept
        self.calls: list[tuple[str, int | None]] = []
        self.gate: asyncio.Event | None = None
        self.fail_get = False

    async def call(self, name: str, type_name: str, request: Any, timeout: float) -> Any:
        if name.endswith("/get_state"):
            if self.fail_get:
                raise CallTimeout(f"service {name} did not answer within {timeout:g} s", timeout)
            self.calls.append((name, None))
            return SimpleNamespace(current_state=SimpleNamespace(id=self.state))
        self.calls.append((name, request.transition.id))
        if self.gate is not None:
            await self.gate.wait()
        return SimpleNamespace(success=self.accept)


async def settle(provider: LifecycleProvider) -> None:
    while any(r.status == IN_PROGRESS for r in provider.records.values()):
        await asyncio.sleep(0.001)


def test_start_runs_each_step_in_order() -> None:
    async def scenario() -> None:
        caller = Caller(UNCONFIGURED)
        prov = LifecycleProvider(caller, 1.0)
        record = await prov.request("a1", "/n", "start")
        assert record.status == IN_PROGRESS and record.from_state == "unconfigured"
        await settle(prov)
        assert record.status == COMPLETED and record.done == ["configure", "activate"]
        assert caller.calls == [("/n/get_state", None), ("/n/change_state", 1),
                                ("/n/change_state", 3)]
        body = record.body()
        assert body["steps"] == ["configure", "activate"] and "completed_at" in body

    asyncio.run(scenario())


def test_busy_refused_and_failed_step_reported() -> None:
    async def scenario() -> None:
        caller = Caller(ACTIVE, accept=False)
        caller.gate = asyncio.Event()
        prov = LifecycleProvider(caller, 1.0)
        record = await prov.request("a1", "/n", "shutdown")
        with pytest.raises(Busy):
            await prov.request("a1", "/n", "restart")
        caller.gate.set()
        await settle(prov)
        assert record.status == FAILED and record.done == []
        assert record.error is not None and "deactivate" in record.error

    asyncio.run(scenario())


def test_no_op_unreachable_and_precondition() -> None:
    async def scenario() -> None:
        prov = LifecycleProvider(Caller(ACTIVE), 1.0)
        assert (await prov.request("a1", "/n", "start")).status == COMPLETED  # already active
        caller = Caller(FINALIZED)
        with pytest.raises(PlanError):
            await LifecycleProvider(caller, 1.0).request("a1", "/n", "restart")
        caller.fail_get = True
        with pytest.raises(Unavailable, match="did not answer"):
            await LifecycleProvider(caller, 1.0).request("a1", "/n", "start")

    asyncio.run(scenario())


def test_force_restart_abandons_a_running_transition() -> None:
    async def scenario() -> None:
        caller = Caller(ACTIVE)
        caller.gate = asyncio.Event()  # the first transition hangs in its first step
        prov = LifecycleProvider(caller, 1.0)
        first = await prov.request("a1", "/n", "shutdown")
        await asyncio.sleep(0.01)
        with pytest.raises(Busy):
            await prov.request("a1", "/n", "restart")
        forced = await prov.request("a1", "/n", "force-restart")
        assert first.status == FAILED and first.error == "abandoned for a force-restart"
        assert [s.label for s in forced.steps] == ["deactivate", "cleanup", "configure",
                                                   "activate"]
        caller.gate.set()
        await settle(prov)
        assert forced.status == COMPLETED and prov.records["a1"] is forced
        await prov.close()

    asyncio.run(scenario())
