"""Pure hardening pieces: Range planning, client log limiting, readiness, health documents, drain."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from gateway.discovery.readiness import Readiness
from gateway.errors import ApiError
from gateway.federation.health import INVALID_RESPONSE, PeerHealth, is_health_document
from gateway.http import ranges
from gateway.http.clientlog import ClientLogLimiter
from gateway.http.drain import Drain

MIB = 1 << 20


def test_overlapping_and_adjacent_ranges_merge() -> None:
    assert ranges.coalesce([(10, 20), (0, 5), (6, 9), (15, 30), (40, 50)]) == [(0, 30), (40, 50)]
    assert ranges.plan(ranges.parse_range("bytes=0-9, 5-19, 20-29"), 100) == [(0, 29)]


def test_a_flood_of_ranges_costs_at_most_one_file() -> None:
    header = "bytes=" + ", ".join(["0-"] * 2000)
    assert ranges.plan(ranges.parse_range(header), MIB) is None
    # many disjoint small ranges: more than the cap, or dearer than the file: whole file
    many = "bytes=" + ", ".join(f"{i * 100}-{i * 100 + 1}" for i in range(200))
    assert ranges.plan(ranges.parse_range(many), MIB) is None
    dear = "bytes=0-0, 2-2, 4-4"
    assert ranges.plan(ranges.parse_range(dear), 100) is None
    # a few real ranges of a large file stay a multipart answer
    few = ranges.plan(ranges.parse_range("bytes=0-9999, 500000-509999, -10000"), MIB)
    assert few == [(0, 9999), (500000, 509999), (MIB - 10000, MIB - 1)]
    assert ranges.plan(ranges.parse_range("bytes=2000000-"), MIB) == []


def test_worst_case_answer_is_bounded_by_the_file_size() -> None:
    for header in ("bytes=" + ", ".join(f"{i}-{i + 3}" for i in range(0, 4000, 5)),
                   "bytes=" + ", ".join(f"-{n}" for n in range(1, 3000)),
                   "bytes=" + ", ".join(f"{i}-{i}" for i in range(0, 64 * 16, 64))):
        spans = ranges.plan(ranges.parse_range(header), 4096)
        if spans is None:  # the whole file
            continue
        cost = sum(e - s + 1 + ranges.PART_OVERHEAD + 64 for s, e in spans) \
            if len(spans) > 1 else spans[0][1] - spans[0][0] + 1
        assert cost <= 4096


def test_client_log_lines_are_limited_per_client_and_minute() -> None:
    lim = ClientLogLimiter(3)
    assert [lim.allow("a", 0.0)[0] for _ in range(5)] == [True, True, True, False, False]
    assert lim.allow("b", 1.0) == (True, 0)  # another client has its own budget
    assert lim.allow("a", 61.0) == (True, 2)  # the next minute reports what was dropped
    assert lim.allow("a", 62.0) == (True, 0)


def test_readiness_waits_for_the_graph_to_settle() -> None:
    r = Readiness(start=0.0, settle_s=1.0, cap_s=10.0)
    assert not r.observe(True, 0.2)
    assert not r.observe(True, 0.9)  # a node discovered late moves the settle point
    assert not r.observe(False, 1.5)
    assert r.observe(False, 2.0) and r.ready_at == 2.0
    busy = Readiness(start=0.0, settle_s=1.0, cap_s=3.0)
    assert not any(busy.observe(True, t / 10) for t in range(29))
    assert busy.observe(True, 3.0)  # a graph that never settles: ready at the cap


def test_only_a_gateway_health_document_counts() -> None:
    assert is_health_document({"status": "healthy", "timestamp": 1, "warning_schema_version": 2})
    for junk in (None, [], "ok", {"status": "ok"}, {"status": 1, "timestamp": 1,
                                                    "warning_schema_version": 2}):
        assert not is_health_document(junk)
    h = PeerHealth()
    h.record(True, 0.0)
    assert h.record(False, 0.5, INVALID_RESPONSE) is True and not h.online


def test_drain_waits_for_calls_then_answers_the_rest_503() -> None:
    async def scenario() -> tuple[list[object], int]:
        drain = Drain()
        quick = asyncio.ensure_future(drain.run(asyncio.sleep(0.05, "quick"), False))
        slow = asyncio.ensure_future(drain.run(asyncio.sleep(3600, "slow"), False))
        stream = asyncio.ensure_future(drain.run(asyncio.sleep(3600), True))
        await asyncio.sleep(0)
        abandoned = await drain.stop(0.5)
        results = await asyncio.gather(quick, slow, stream, return_exceptions=True)
        with pytest.raises(ApiError):
            await drain.run(asyncio.sleep(0), False)  # new calls: 503 at once
        return results, abandoned

    (quick, slow, stream), abandoned = asyncio.run(scenario())
    assert quick == "quick" and abandoned == 1
    assert isinstance(slow, ApiError) and slow.status == 503
    assert isinstance(stream, asyncio.CancelledError)


def _document() -> dict:
    from gateway.app import build_registry
    from gateway.http.openapi import build

    return build(build_registry("vendor", set()), vendor="vendor", version="0", with_roles=False)


def _untyped(doc: dict) -> list[str]:
    untyped = []
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for status, resp in op["responses"].items():
                for media in resp.get("content", {}).values():
                    if "$ref" not in media["schema"]:
                        untyped.append(f"{method} {path} {status}")
            for media in op.get("requestBody", {}).get("content", {}).values():
                if "$ref" not in media["schema"]:
                    untyped.append(f"{method} {path} request")
    return untyped


def test_the_document_types_every_request_and_response() -> None:
    doc = _document()
    assert len(doc["components"]["schemas"]) > 30
    assert _untyped(doc) == []
    refs = {json.dumps(op) for ops in doc["paths"].values() for op in ops.values()}
    named = set(re.findall(r"#/components/schemas/(\w+)", " ".join(refs)))
    assert named <= set(doc["components"]["schemas"])  # every $ref resolves


def test_a_built_in_route_without_a_schema_is_reported() -> None:
    from gateway.http.openapi import build
    from gateway.http.routes import Registry

    async def handler(_request: object) -> None:
        """An undocumented route."""

    reg = Registry("vendor")
    reg.add("GET", "/x-vendor-undocumented", handler)
    reg.add("POST", "/x-vendor-undocumented", handler, status=201, response="Empty",
            request=None)
    reg.add("PUT", "/x-vendor-undocumented", handler, response="Empty", request="Object")
    doc = build(reg, vendor="vendor", version="0", with_roles=False)
    assert _untyped(doc) == ["get /x-vendor-undocumented 200"]


def test_plugin_routes_carry_their_declared_schema_or_the_generic_one() -> None:
    from gateway.app import build_registry
    from gateway.http.openapi import build
    from gateway.plugins.manager import PluginManager
    from gateway.settings.config import load

    plugins = PluginManager(load(None, ["plugins=[graph_provider,graph_watchdog,test_plc]"]))
    assert [p.name for p in plugins.loaded] == ["graph_provider", "graph_watchdog", "test_plc"]
    doc = build(build_registry("vendor", set(), plugins), vendor="vendor", version="0",
                with_roles=False)
    assert _untyped(doc) == []

    def schema(path: str, method: str) -> str:
        op = doc["paths"][path][method]
        return op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]

    assert schema("/functions/{function_id}/x-vendor-graph", "get").endswith("/FunctionGraph")
    assert schema("/x-vendor-watchdog", "get").endswith("/WatchdogStatus")
    assert {"FunctionGraph", "WatchdogStatus", "PluginResponse"} <= set(
        doc["components"]["schemas"])
    assert schema("/apps/{app_id}/x-vendor-plc-status", "get").endswith("/PluginResponse")
    command = doc["paths"]["/apps/{plc_id}/x-vendor-plc-command"]["post"]
    assert command["requestBody"]["content"]["application/json"]["schema"]["$ref"] \
        .endswith("/PluginRequest")


def test_the_document_states_oauth_errors_405s_alternates_and_multipart() -> None:
    paths = _document()["paths"]
    revoke = paths["/auth/revoke"]["post"]
    assert revoke["responses"]["400"]["content"]["application/json"]["schema"]["$ref"] \
        .endswith("/OAuthError")
    assert "application/x-www-form-urlencoded" in revoke["requestBody"]["content"]
    assert set(paths["/areas/{area_id}/bulk-data/{category}"]["post"]["responses"]) >= {"405"}
    upload = paths["/apps/{app_id}/bulk-data/{category}"]["post"]
    assert "201" in upload["responses"] and "multipart/form-data" in upload["requestBody"][
        "content"]
    for path, method in (("/apps/{app_id}/operations/{op_id}/executions", "post"),
                         ("/apps/{app_id}/faults/{fault_code}", "delete"),
                         ("/apps/{app_id}/configurations", "delete")):
        assert paths[path][method]["x-vendor-alternates"] is True, path
    assert "x-vendor-alternates" not in paths["/apps/{app_id}/data"]["get"]


def test_head_is_routed_wherever_get_is() -> None:
    from aiohttp import web

    from gateway.app import build_registry

    reg = build_registry("vendor", set())
    app = web.Application()
    reg.install(app)
    methods: dict[str, set[str]] = {}
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        key = str(info.get("formatter") or info.get("path"))
        methods.setdefault(key, set()).add(route.method)
    assert methods and all("HEAD" in m for m in methods.values() if "GET" in m)


def test_upload_metadata_that_cannot_be_served_is_refused() -> None:
    from gateway.bulk_data.handlers import _metadata

    assert _metadata('{"a": 1, "b": [true]}') == {"a": 1, "b": [True]}
    with pytest.raises(ApiError) as err:
        _metadata('{"n": 1099511627775000000000000}')  # beyond 64 bits: 500 on every list
    assert err.value.status == 400
