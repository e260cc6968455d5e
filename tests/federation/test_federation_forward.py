"""Forward addressing and budgets (gateway/federation/forward.py), and mDNS helpers
(gateway/federation/mdns.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from zeroconf import InterfaceChoice

from gateway.federation.forward import (
    BudgetExceeded,
    _answer,
    _fill,
    _rename_body,
    _split,
    rewrite_location,
)
from gateway.federation.mdns import (
    announced_addresses,
    instance_of,
    interface_addresses,
    loopback_only_warning,
)
from gateway.federation.settings import MdnsOptions
from gateway.http.routes import Route


async def _nothing(_: Any) -> Any:
    return None


def route(path: str, method: str = "GET") -> Route:
    from gateway.model.roles import Role

    return Route(method, path, _nothing, Role.VIEWER, "")


def test_split_entity_routes() -> None:
    assert _split(route("/apps/{app_id}/data/{data_id}")) == ("apps", "data", "/data/{data_id}")
    assert _split(route("/components/{component_id}")) == ("components", "", "")
    assert _split(route("/faults")) is None
    assert _split(route("/{entity_path}/docs")) is None


def test_fill_encodes_every_parameter_as_one_segment() -> None:
    assert _fill("/apps/{app_id}/data/{data_id}", {"app_id": "a", "data_id": "/x/y"}) == \
        "/apps/a/data/%2Fx%2Fy"
    assert _fill("/apps/{app_id}/operations/{op_id}/executions",
                 {"app_id": "a", "op_id": "m:calibrate"}) == \
        "/apps/a/operations/m%3Acalibrate/executions"


class _Fed:
    def rename(self, gateway: str, app_id: str) -> str:
        return {("r2", "temp_sensor"): "r2__temp_sensor"}.get((gateway, app_id), app_id)


def test_location_is_rewritten_to_fleet_ids() -> None:
    fed: Any = _Fed()
    loc = "/api/v1/apps/temp_sensor/operations/x/executions/42"
    assert rewrite_location(loc, "r2", fed) == \
        "/api/v1/apps/r2__temp_sensor/operations/x/executions/42"
    assert rewrite_location("http://10.0.0.2:8080" + loc, "r2", fed).startswith(
        "/api/v1/apps/r2__temp_sensor/")
    assert rewrite_location("/api/v1/components/host/x", "r2", fed) == "/api/v1/components/host/x"
    assert rewrite_location("/elsewhere", "r2", fed) == "/elsewhere"


def test_json_bodies_name_the_fleet_id() -> None:
    body = b'{"href":"/api/v1/apps/t/data","x":{"entity_id":"t"},"h":"/api/v1/apps/t"}'
    assert _rename_body(body, "apps", "t", "r2__t") == (
        b'{"href":"/api/v1/apps/r2__t/data","x":{"entity_id":"r2__t"},'
        b'"h":"/api/v1/apps/r2__t"}')
    # another app whose id merely starts alike is left alone
    assert _rename_body(b'"/api/v1/apps/tx/data"', "apps", "t", "r2__t") == \
        b'"/api/v1/apps/tx/data"'


def _run_answer(answer_after: float, body_sent_after: float | None, write_s: float,
                read_s: float) -> Any:
    async def main() -> Any:
        sent = asyncio.Event()
        if body_sent_after is None:
            sent.set()
        else:
            asyncio.get_running_loop().call_later(body_sent_after, sent.set)

        async def peer() -> str:
            await asyncio.sleep(answer_after)
            return "answer"

        call = asyncio.ensure_future(peer())
        try:
            return await _answer(call, sent, write_s, read_s)  # type: ignore[arg-type]
        except BudgetExceeded as exc:
            call.cancel()
            return exc.setting
    return asyncio.run(main())


def test_forward_budgets() -> None:
    assert _run_answer(0.01, None, 1.0, 1.0) == "answer"
    assert _run_answer(1.0, None, 1.0, 0.05) == "aggregation.forward_timeout_ms"
    assert _run_answer(1.0, 0.5, 0.05, 1.0) == "aggregation.write_timeout_ms"
    # the read budget starts once the body is pushed
    assert _run_answer(0.15, 0.1, 0.2, 0.1) == "answer"


def test_loopback_only_mdns_is_warned_naming_the_setting() -> None:
    on = MdnsOptions(announce=True)
    text = loopback_only_warning(on, ["127.0.0.1"])
    assert text is not None and "announce" in text and "aggregation.mdns_interfaces" in text
    assert "discover" in (loopback_only_warning(MdnsOptions(discover=True), ["127.0.0.1"]) or "")
    assert loopback_only_warning(on, ["10.1.2.3", "127.0.0.1"]) is None
    assert loopback_only_warning(on, InterfaceChoice.All) is None
    assert loopback_only_warning(MdnsOptions(), ["127.0.0.1"]) is None


def test_mdns_helpers() -> None:
    assert interface_addresses(("127.0.0.1",)) == ["127.0.0.1"]
    assert interface_addresses(("all",)) is InterfaceChoice.All
    assert interface_addresses(("lo",)) == ["127.0.0.1"]
    with pytest.raises(ValueError, match="mdns_interfaces"):
        interface_addresses(("no-such-if0",))
    assert announced_addresses("10.1.2.3", ["127.0.0.1"]) == ["10.1.2.3"]
    assert announced_addresses("0.0.0.0", ["127.0.0.1"]) == ["127.0.0.1"]
    svc = "_diag-gateway._tcp.local."
    assert instance_of(f"robot-1.{svc}", svc) == "robot-1"
