"""Writes through parents meet their members' locks; a lock expires at its instant (its timer)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from gateway.app import make_app
from gateway.errors import ApiError
from gateway.events import LOCKS, Event
from gateway.http.state import STATE, GatewayState
from gateway.locks.guard import LOCK_SERVICE, LockService, between
from gateway.model.entities import Entity, EntitySet
from gateway.settings.config import load

HOLDER, OTHER = "holder-client", "other-client"


def entities() -> EntitySet:
    es = EntitySet()
    es.components["host"] = Entity("components", "host", "host")
    es.components["sub"] = Entity("components", "sub", "sub", parent="host")
    es.apps["a1"] = Entity("apps", "a1", "a1", node_fqn="/ns/a1", component="sub")
    es.apps["a2"] = Entity("apps", "a2", "a2", node_fqn="/ns/a2", component="sub")
    es.areas["ar"] = Entity("areas", "ar", "ar")
    es.functions["fn"] = Entity("functions", "fn", "fn", hosts=["a1", "a2"])
    return es


@pytest.fixture()
def app(tmp_path: Path) -> web.Application:
    app = make_app(load(None, [f"state_dir={tmp_path}", "locking.cleanup_interval=600"]))
    st = app[STATE]
    st.cache = SimpleNamespace(entities=entities())
    return app


@pytest.fixture()
def state(app: web.Application) -> GatewayState:
    return app[STATE]


def test_required_scopes_between_a_parent_and_its_member() -> None:
    es = entities()
    assert between(es, "areas", "ar", "a1") == [("apps", "a1"), ("components", "sub")]
    assert between(es, "functions", "fn", "a1") == [("apps", "a1"), ("components", "sub")]
    assert between(es, "components", "host", "a1") == [("apps", "a1"), ("components", "sub")]
    assert between(es, "components", "sub", "a1") == [("apps", "a1")]


def test_a_write_through_a_parent_is_refused_naming_every_locked_member(
        app: web.Application, state: GatewayState) -> None:
    svc: LockService = app[LOCK_SERVICE]
    es = state.cache.entities
    now = time.time()
    req = make_mocked_request("PUT", "/api/v1/x", headers={"X-Client-Id": OTHER})
    svc.check_members(req, es.functions["fn"], "configurations", ["a1", "a2"])  # none held
    for app in ("a1", "a2"):
        svc.manager.acquire("apps", app, HOLDER, ["configurations"], 60, False, now)
    with pytest.raises(ApiError) as caught:
        svc.check_members(req, es.functions["fn"], "configurations", ["a1", "a2"])
    err = caught.value
    assert err.status == 409 and err.error_code == "lock-broken"
    assert [m["app_id"] for m in err.parameters["locked_members"]] == ["a1", "a2"]
    assert "a1, a2" in err.message and "nothing was changed" in err.message
    svc.check_members(req, es.functions["fn"], "data", ["a1", "a2"])  # not covered
    own = make_mocked_request("PUT", "/api/v1/x", headers={"X-Client-Id": HOLDER})
    svc.check_members(own, es.areas["ar"], "configurations", ["a1", "a2"])
    svc.check_members(req, es.apps["a1"], "configurations", ["a1"])  # the guard's job


def test_a_lock_expires_at_its_instant_not_at_the_sweep(app: web.Application, state: GatewayState) -> None:
    svc: LockService = app[LOCK_SERVICE]
    seen: list[Event] = []
    state.events.subscribe([LOCKS], seen.append)

    async def scenario() -> float:
        lock, _ = svc.manager.acquire("apps", "a1", HOLDER, None, 0.3, False, time.time())
        svc.arm(lock)
        started = time.monotonic()
        while not any(e.change == "expired" for e in seen):
            assert time.monotonic() - started < 10, "no expiry event"
            await asyncio.sleep(0.02)
        assert svc.manager.locks == {}
        again, _ = svc.manager.acquire("apps", "a1", HOLDER, None, 0.2, False, time.time())
        svc.arm(again)
        svc.disarm(again)  # released: its timer is gone
        await asyncio.sleep(0.4)
        assert svc.manager.locks  # only the sweep (every 600 s here) would remove it
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 10
    assert [e.change for e in seen] == ["expired"]
