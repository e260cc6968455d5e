"""The update status and phase machine, and the manager's events (fake provider)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from gateway.errors import ApiError
from gateway.events import UPDATES, Event, EventBus
from gateway.plugins.api import NotFound, PluginError
from gateway.plugins.calls import Caller
from gateway.updates import machine
from gateway.updates.machine import TransitionError, UpdateStatus
from gateway.updates.manager import UpdateManager


def test_prepare_then_execute_walks_the_table() -> None:
    st = machine.begin(UpdateStatus(), machine.PREPARE)
    assert (st.status, st.phase, st.running) == ("pending", "preparing", True)
    st = machine.started(st)
    assert st.status == "inProgress"
    st = machine.succeeded(st)
    assert (st.status, st.phase, st.progress, st.running) == ("completed", "prepared", 100, False)
    st = machine.begin(st, machine.EXECUTE)
    assert (st.status, st.phase) == ("inProgress", "executing")
    st = machine.succeeded(st)
    assert (st.status, st.phase) == ("completed", "executed")


def test_refusals() -> None:
    with pytest.raises(TransitionError) as exc:
        machine.begin(UpdateStatus(), machine.EXECUTE)
    assert (exc.value.status, exc.value.vendor_code) == (400, "x-vendor-update-not-prepared")
    running = machine.begin(UpdateStatus(), machine.PREPARE)
    for op in (machine.PREPARE, machine.EXECUTE, machine.AUTOMATED, machine.DELETE):
        with pytest.raises(TransitionError) as exc:
            machine.begin(running, op)
        assert exc.value.status == 409 and exc.value.vendor_code == "x-vendor-update-in-progress"
    with pytest.raises(TransitionError) as exc:
        machine.begin(UpdateStatus(), machine.AUTOMATED, automated_supported=False)
    assert exc.value.vendor_code == "x-vendor-update-not-automated"
    # a failed or finished package may be prepared again
    failed = machine.failed(running, "boom")
    assert machine.begin(failed, machine.PREPARE).phase == "preparing"


def test_automated_mode_runs_on_through_its_execute_step() -> None:
    st = machine.started(machine.begin(UpdateStatus(), machine.AUTOMATED))
    st = machine.executing(machine.succeeded(st))  # prepare done, execute begins
    assert (st.status, st.phase, st.running) == ("inProgress", "executing", True)
    for op in (machine.PREPARE, machine.EXECUTE, machine.AUTOMATED, machine.DELETE):
        with pytest.raises(TransitionError) as exc:
            machine.begin(st, op)
        assert exc.value.status == 409


def test_status_body_and_progress() -> None:
    st = machine.progressed(machine.begin(UpdateStatus(), machine.PREPARE), 150,
                            [{"name": "verify", "progress": 40}])
    assert st.body("x-acme") == {"status": "pending", "progress": 100,
                                 "sub_progress": [{"name": "verify", "progress": 40}],
                                 "x-acme": {"phase": "preparing"}}
    assert machine.failed(st, "bad").body("x-v")["error"] == {"error_code": "vendor-error",
                                                              "message": "bad"}


class FakeProvider:
    """Records calls; prepare waits for a release so tests can see the running state."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.release = threading.Event()
        self.fail_execute = False

    def list_updates(self, filters: dict[str, str]) -> list[str]:
        return list(self.meta)

    def get_update(self, uid: str) -> Any:
        if uid not in self.meta:
            raise NotFound(uid)
        return self.meta[uid]

    def register_update(self, meta: dict[str, Any]) -> None:
        self.meta[meta["id"]] = meta

    def delete_update(self, uid: str) -> None:
        self.meta.pop(uid)

    def supports_automated(self, uid: str) -> bool:
        return True

    def prepare(self, uid: str, reporter: Any) -> None:
        reporter.set_progress(50)
        self.release.wait(60)  # the test releases it (generous: a starved worker)

    def execute(self, uid: str, reporter: Any) -> None:
        if self.fail_execute:
            raise PluginError("disk full")


class State:
    def __init__(self) -> None:
        self.events = EventBus()
        self.xv = "x-vendor"


def test_manager_publishes_each_status_change() -> None:
    async def run() -> list[Event]:
        state = State()
        seen: list[Event] = []
        state.events.subscribe([UPDATES], seen.append)
        provider = FakeProvider()
        mgr = UpdateManager(state, provider, Caller("fake", 2.0), 10.0)
        await mgr.register({"id": "u1"})
        await mgr.start("u1", machine.AUTOMATED)
        deadline = time.monotonic() + 60  # generous: a busy machine
        while time.monotonic() < deadline:
            if (await mgr.status("u1")).progress == 50:
                break
            await asyncio.sleep(0.01)
        with pytest.raises(ApiError) as exc:  # running: 409
            await mgr.start("u1", machine.PREPARE)
        assert exc.value.status == 409
        with pytest.raises(ApiError):
            await mgr.delete("u1")
        provider.fail_execute = True
        provider.release.set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not (await mgr.status("u1")).running:
                break
            await asyncio.sleep(0.01)
        final = await mgr.status("u1")
        assert (final.status, final.phase, final.error) == ("failed", "failed", "disk full")
        await mgr.delete("u1")
        with pytest.raises(ApiError) as exc:
            await mgr.status("u1")
        assert exc.value.status == 404
        return seen

    seen = asyncio.run(run())
    assert all(e.kind == UPDATES and e.entity_id is None and e.resource == "u1"
               and e.change == "status" for e in seen)
    phases = [e.payload["x-vendor"]["phase"] for e in seen]
    assert phases[0] == "none" and "preparing" in phases and "executing" in phases
    assert phases[-1] == "deleting"
    assert any(e.payload.get("progress") == 50 for e in seen)
