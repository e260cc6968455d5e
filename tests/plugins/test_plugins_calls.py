"""Plugin calls (timeouts, error mapping) and plugin loading into the one route registry."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from gateway.app import build_registry
from gateway.auth.enforce import required_role
from gateway.errors import ApiError
from gateway.model.roles import Role
from gateway.plugins.api import NotFound, PluginError
from gateway.plugins.calls import Caller, plugin_error
from gateway.plugins.manager import PluginManager
from gateway.settings import config


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_plugin_error_body() -> None:
    err = plugin_error(200, "m" * 600, "e1")
    body = err.body("acme")
    assert err.status == 400 and body["vendor_code"] == "x-acme-plugin-error"
    assert body["error_code"] == "vendor-error" and body["parameters"] == {"entity_id": "e1"}
    assert len(body["message"]) == 515
    assert plugin_error(999, "x").status == 599


def test_sync_and_async_calls_time_out_without_blocking_the_loop() -> None:
    release = threading.Event()

    def stuck() -> None:
        release.wait(10)

    async def stuck_async() -> None:
        await asyncio.sleep(10)

    async def main() -> list[str]:
        caller = Caller("p", 0.2)
        order: list[str] = []

        async def ticker() -> None:
            await asyncio.sleep(0.05)
            order.append("loop ran")

        for fn in (stuck, stuck_async):
            task = asyncio.ensure_future(ticker())
            with pytest.raises(ApiError) as exc:
                await caller(fn)
            await task
            assert exc.value.status == 504 and "'p'" in exc.value.message
            order.append("timed out")
        release.set()
        assert caller.stats()["timeouts"] == 2
        return order

    assert run(main()) == ["loop ran", "timed out", "loop ran", "timed out"]


def test_errors_map_to_the_plugin_body_or_pass_through() -> None:
    def refuse() -> None:
        raise PluginError("no", 403)

    def crash() -> None:
        raise KeyError("x")

    def missing() -> None:
        raise NotFound("gone")

    async def main() -> None:
        caller = Caller("p", 1.0)
        with pytest.raises(ApiError) as exc:
            await caller(refuse, entity_id="a")
        assert exc.value.status == 403 and exc.value.parameters == {"entity_id": "a"}
        with pytest.raises(ApiError) as exc:
            await caller(crash)
        assert exc.value.status == 500 and exc.value.message == "Plugin threw exception"
        with pytest.raises(NotFound):
            await caller(missing, passthrough=(NotFound,))
        assert await caller(lambda x: x + 1, 1) == 2

    run(main())


def test_a_hung_call_uses_only_its_plugins_slots() -> None:
    async def main() -> None:
        caller = Caller("p", 0.3, threads=1)
        with pytest.raises(ApiError):
            await caller(time.sleep, 1.0)
        with pytest.raises(ApiError):  # its one slot is still taken
            await caller(lambda: 1)
        other = Caller("q", 0.3, threads=1)
        assert await other(lambda: 7) == 7

    run(main())


def test_plugin_routes_are_admin_only_rows_of_the_registry() -> None:
    settings = config.load(None, ["plugins=[test_plc,test_old_api]"])
    manager = PluginManager(settings)
    assert [p.name for p in manager.loaded] == ["test_plc"]
    assert [f.name for f in manager.failures] == ["test_old_api"]
    reg = build_registry("acme", set(), manager)
    rows = [r for r in reg if r.extra.get("plugin") == "test_plc"]
    assert [(r.method, r.path) for r in rows] == [("GET", "/apps/{app_id}/x-acme-plc-status"),
                                                  ("POST", "/apps/{plc_id}/x-acme-plc-command")]
    assert all(r.role == Role.ADMIN and required_role(r) == Role.ADMIN for r in rows)
    # before the scoped docs catch-all, so the router reaches it
    paths = [r.path for r in reg]
    assert paths.index(rows[0].path) < paths.index("/{entity_path}/docs")
    assert manager.warnings()[0]["code"] == "plugin_load_failed"


def test_spec_error_codes_of_provider_errors() -> None:
    from gateway.plugins import AccessDenied, PreconditionFailed, Unsupported
    from gateway.plugins.calls import map_error

    for exc, status, code in ((AccessDenied("key switch"), 403, "insufficient-access-rights"),
                              (PreconditionFailed("stopped"), 409, "precondition-not-fulfilled")):
        err = map_error(exc, "p", "plc_1")
        assert (err.status, err.error_code, err.vendor_code) == (status, code, None)
        assert err.parameters == {"entity_id": "plc_1"}
    err = map_error(Unsupported("no"), "p", "plc_1")  # the gateway's feature-absent 501
    assert (err.status, err.error_code, err.vendor_code) == (501, "not-implemented", None)
    assert err.parameters == {"feature": "plugin", "entity_id": "plc_1"}
    err = map_error(Unsupported("no calibration", feature="scripts"), "p", None)
    assert err.parameters == {"feature": "scripts"} and err.message == "no calibration"
    err = map_error(PreconditionFailed("y" * 600), "p", None)
    assert len(err.message) == 515 and err.parameters is None


def test_log_entries_follow_the_entity_configuration() -> None:
    from gateway.plugins.entity_logs import pick

    entries = [{"severity": "debug", "message": "a"}, {"severity": "bogus", "message": "b"},
               {"severity": "error", "message": "c", "id": "x"}, {"message": 3}, "junk"]
    assert [e["message"] for e in pick(entries, "debug", 100)] == ["a", "b", "c"]
    assert [(e["severity"], e["id"]) for e in pick(entries, "info", 100)] == [
        ("info", "1"), ("error", "x")]
    assert [e["message"] for e in pick(entries, "debug", 1)] == ["c"]
    assert pick({"not": "a list"}, "debug", 5) == []


def test_lifecycle_status_links_the_advertised_transitions() -> None:
    from gateway.plugins.entity_lifecycle import status_body

    body = status_body("/apps/plc_1", {"status": "notReady", "start": True, "restart": False,
                                       "other": True, "force-restart": True})  # other: not routed
    assert body == {"status": "notReady", "start": "/api/v1/apps/plc_1/status/start",
                    "force-restart": "/api/v1/apps/plc_1/status/force-restart"}
    for bad in ({"status": "running"}, None, ["ready"]):
        with pytest.raises(ValueError):
            status_body("/apps/plc_1", bad)


def test_samplers_serve_x_collections_through_the_plugin_caller() -> None:
    from types import SimpleNamespace

    from gateway.model.entities import Entity
    from gateway.plugins.context import PluginContext, parse_plugin_source, plugin_source
    from gateway.push.keys import PUSH_DELIVERY

    caller = Caller("p", 0.3)
    state = SimpleNamespace(vendor="acme")
    delivery = SimpleNamespace(collections={})
    ctx = PluginContext(state, {PUSH_DELIVERY: delivery}, "p", caller)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ctx.register_sampler("graph", lambda t, i: {})

    def sample(entity_type: str, entity_id: str) -> Any:
        if entity_id == "hang":
            time.sleep(5)
        if entity_type != "functions":
            raise NotFound("functions only")
        return {"id": entity_id}

    ctx.register_sampler("x-vendor-graph", sample)
    provide = delivery.collections["x-acme-graph"]

    async def run(kind: str, eid: str) -> Any:
        return await provide(state, Entity(kind, eid, eid))

    assert asyncio.run(run("functions", "f1")) == {"id": "f1"}
    with pytest.raises(ApiError) as raised:
        asyncio.run(run("apps", "a1"))
    assert raised.value.status == 404 and raised.value.vendor_code == "x-vendor-plugin-error"
    with pytest.raises(ApiError) as raised:
        asyncio.run(run("functions", "hang"))
    assert raised.value.status == 504
    assert plugin_source("p", "apps", "a1") == "/x-plugin/p/apps/a1"
    assert parse_plugin_source("/x-plugin/p/apps/a1") == ("p", "apps", "a1")
    assert parse_plugin_source("/ns/node") is None
