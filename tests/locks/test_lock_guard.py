"""The lock guard covers every write route of the registry; the global clear skips locked faults."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from gateway.app import make_app
from gateway.errors import ApiError
from gateway.events import LOCKS, Event
from gateway.faults.keys import FAULT_SERVICE
from gateway.http.routes import API_PREFIX, Route
from gateway.http.state import STATE, GatewayState
from gateway.locks.guard import LOCK_SERVICE, LockService, write_target
from gateway.model.entities import Entity, EntitySet
from gateway.settings.config import load

HOLDER, OTHER = "holder-client", "other-client"


def entities() -> EntitySet:
    es = EntitySet()
    es.components["host"] = Entity("components", "host", "host", hosts=["a1"])
    es.components["sub"] = Entity("components", "sub", "sub", parent="host")
    es.apps["a1"] = Entity("apps", "a1", "a1", node_fqn="/ns/a1", component="host")
    es.areas["ar"] = Entity("areas", "ar", "ar")
    es.functions["fn"] = Entity("functions", "fn", "fn", hosts=["a1"])
    return es


IDS = {"component_id": "host", "app_id": "a1", "sub_id": "sub", "area_id": "ar",
       "function_id": "fn", "plc_id": "a1"}  # plc_id: a test plugin route's own id name


@pytest.fixture()
def app(tmp_path: Path) -> web.Application:
    app = make_app(load(None, [f"state_dir={tmp_path}", "scripts.scripts_dir=" + str(tmp_path),
                               "scripts.allow_root=true",
                               "plugins=[test_plc,test_sensor]"]))  # their write routes too
    st = app[STATE]
    st.cache = SimpleNamespace(entities=entities())
    return app


@pytest.fixture()
def state(app: web.Application) -> GatewayState:
    return app[STATE]


def request_for(route: Route, client: str | None) -> Any:
    match = {p: IDS.get(p, "x") for p in route.params}
    path = API_PREFIX + re.sub(r"\{([a-z_]+)\}", lambda m: match[m.group(1)], route.path)
    headers = {"X-Client-Id": client} if client else {}
    return make_mocked_request(route.method, path, headers=headers, match_info=match)


def guard_answer(st: GatewayState, route: Route, client: str | None) -> ApiError | None:
    try:
        asyncio.run(st.guard(request_for(route, client), route))
    except ApiError as err:
        return err
    return None


def exempt(route: Route) -> str | None:
    """Why no lock can cover a write route (None: a lock must cover it)."""
    segs = route.path.strip("/").split("/")
    if segs[0] not in ("components", "apps", "areas", "functions"):
        return "server-level"
    if segs[0] in ("areas", "functions"):
        return "entity type that cannot be locked"
    if "locks" in segs:
        return "lock route (ownership rules of its own)"
    return None


def test_every_write_route_is_guarded(app: web.Application, state: GatewayState) -> None:
    svc: LockService = app[LOCK_SERVICE]
    lock, _ = svc.manager.acquire("components", "host", HOLDER, None, 60, False, time.time())
    writes = [r for r in state.registry if r.is_write]
    assert len(writes) > 40
    plugin_writes = {r.path for r in writes if r.extra.get("plugin")}
    assert plugin_writes == {"/apps/{plc_id}/x-vendor-plc-command",
                             "/apps/{app_id}/x-vendor-sensor-fault"}
    covered = 0
    for route in writes:
        why = exempt(route)
        if why is not None:
            assert write_target(route) is None, route.path
            err = guard_answer(state, route, OTHER)
            assert err is None or err.status != 409, (route.method, route.path)
            continue
        assert write_target(route) is not None, (route.method, route.path)
        err = guard_answer(state, route, OTHER)
        assert err is not None and err.status == 409, (route.method, route.path)
        assert err.error_code == "lock-broken"
        assert err.parameters and err.parameters["lock_id"] == lock.id
        assert err.parameters["entity_id"] == "host" and err.parameters["lock_expiration"]
        assert guard_answer(state, route, None) is not None  # no header: another client
        assert guard_answer(state, route, HOLDER) is None, (route.method, route.path)
        covered += 1
    assert covered > 20
    # nothing held: every write passes
    svc.manager.locks.clear()
    assert all(guard_answer(state, r, OTHER) is None for r in writes)


def test_write_targets_name_the_collection() -> None:
    def target(path: str, method: str = "PUT") -> Any:
        t = write_target(Route(method, path, lambda r: None, role=None, summary=""))  # type: ignore[arg-type]
        return t and (t.kind, t.id_param, t.collection)

    assert target("/apps/{app_id}/data/{data_id}") == ("apps", "app_id", "data")
    assert target("/components/{component_id}/status/shutdown") == (
        "components", "component_id", "modes")
    assert target("/components/{component_id}/subcomponents/{sub_id}/bulk-data/{category}",
                  "POST") == ("components", "sub_id", "bulk-data")
    assert target("/apps/{plc_id}/x-vendor-plc-command", "POST") == (
        "apps", "plc_id", "x-vendor-plc-command")
    literal = write_target(Route("POST", "/apps/plc_1/x-vendor-reset", lambda r: None,  # type: ignore[arg-type]
                                 role=None, summary=""))
    assert literal is not None and literal.entity_id == "plc_1"
    assert target("/apps/{app_id}/locks/{lock_id}") is None
    assert target("/faults", "DELETE") is None
    assert target("/areas/{area_id}/faults", "DELETE") is None


def test_global_clear_filter_skips_faults_of_locked_entities(app: web.Application, state: GatewayState) -> None:
    svc: LockService = app[LOCK_SERVICE]
    assert svc.clear_filter in app[FAULT_SERVICE].hooks.clear_filters
    req = make_mocked_request("DELETE", "/api/v1/faults", headers={"X-Client-Id": OTHER})
    assert svc.clear_filter(req, "F", ["/ns/a1"]) is False
    svc.manager.acquire("components", "host", HOLDER, ["faults"], 60, False, time.time())
    assert svc.clear_filter(req, "F", ["/ns/a1"]) is True  # via the app's component
    assert svc.clear_filter(req, "F", ["/elsewhere"]) is False
    own = make_mocked_request("DELETE", "/api/v1/faults", headers={"X-Client-Id": HOLDER})
    assert svc.clear_filter(own, "F", ["/ns/a1"]) is False
    # a fault a plugin raised for its app (docs/plugins.md) is that app's
    plugin_fault = "/x-plugin/test_plc/apps/a1"
    assert svc.clear_filter(req, "F", [plugin_fault]) is True
    assert svc.clear_filter(own, "F", [plugin_fault]) is False
    assert svc.clear_filter(req, "F", ["/x-plugin/test_plc/apps/gone"]) is False


def test_sweep_publishes_expiry_on_the_bus(app: web.Application, state: GatewayState) -> None:
    svc: LockService = app[LOCK_SERVICE]
    seen: list[Event] = []
    state.events.subscribe([LOCKS], seen.append)
    now = time.time()
    lock, _ = svc.manager.acquire("apps", "a1", HOLDER, ["data"], 5, False, now)
    assert svc.sweep(now + 1) == []
    assert svc.sweep(now + 5) == [lock]
    (event,) = seen
    assert (event.kind, event.entity_id, event.resource, event.change) == (
        LOCKS, "a1", lock.id, "expired")
    assert event.payload["client_id"] == HOLDER and event.payload["entity_type"] == "apps"
    assert event.payload["lock_id"] == lock.id and event.payload["entity_id"] == "a1"
    assert event.payload["cyclic_subscriptions"] is False
    assert svc.manager.locks == {}


def test_locking_disabled_installs_no_guard(tmp_path: Path) -> None:
    app = make_app(load(None, [f"state_dir={tmp_path}", "locking.enabled=false"]))
    st = app[STATE]
    assert not app[LOCK_SERVICE].enabled and "locks" not in st.features
    assert not st.guard.write_checks


def test_lock_routes_answer_501_when_locking_is_disabled(tmp_path: Path) -> None:
    from gateway.locks import handlers as locks

    app = make_app(load(None, [f"state_dir={tmp_path}", "locking.enabled=false"]))
    request = make_mocked_request("GET", "/api/v1/apps/a1/locks", app=app,
                                  match_info={"app_id": "a1"})
    with pytest.raises(ApiError) as info:
        asyncio.run(locks.list_locks(request))
    assert info.value.status == 501 and info.value.error_code == "not-implemented"
    assert info.value.parameters and "locking.enabled" in info.value.parameters["details"]


def test_unknown_required_scope_is_refused_at_startup(tmp_path: Path) -> None:
    from gateway.settings.config import ConfigError

    with pytest.raises(ConfigError, match="locking.defaults.apps.lock_required_scopes"):
        make_app(load(None, [f"state_dir={tmp_path}",
                             "locking.defaults.apps.lock_required_scopes=[data,config]"]))
