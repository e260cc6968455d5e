"""Pure HTTP pieces: Range parsing, URI checks, error bodies, route registry, OpenAPI."""

from __future__ import annotations

import pytest

from gateway import errors
from gateway.http import openapi, ranges
from gateway.http.middleware import check_uri
from gateway.http.routes import Registry


@pytest.mark.parametrize(("header", "parsed"), [
    ("bytes=0-99", [(0, 99)]),
    ("bytes=100-", [(100, None)]),
    ("bytes=-500", [(None, 500)]),
    ("bytes=0-0, 10-20,-1", [(0, 0), (10, 20), (None, 1)]),
])
def test_parse_range(header: str, parsed: list) -> None:
    assert ranges.parse_range(header) == parsed


@pytest.mark.parametrize("header", ["bytes=", "bytes=a-b", "items=0-1", "bytes=5-1", "0-1",
                                    "bytes=-", "bytes=1-2,,3-4"])
def test_unparseable_ranges(header: str) -> None:
    with pytest.raises(ranges.RangeError):
        ranges.parse_range(header)


def test_resolve_ranges_against_size() -> None:
    assert ranges.resolve([(0, 99)], 50) == [(0, 49)]
    assert ranges.resolve([(None, 10)], 50) == [(40, 49)]
    assert ranges.resolve([(60, None)], 50) == []
    assert ranges.resolve([(10, None), (None, 0)], 50) == [(10, 49)]


def test_uri_checks() -> None:
    check_uri("/api/v1/apps/a/data/%2Ftopic", 8192)
    with pytest.raises(errors.ApiError) as e:
        check_uri("/api/v1/" + "a" * 100, 50)
    assert e.value.status == 414 and e.value.error_code == "resource-not-found"
    for bad in ("/api/v1/x/%zz", "/api/v1/x/%4", "/api/v1/x/%FF"):
        with pytest.raises(errors.ApiError) as e:
            check_uri(bad, 8192)
        assert e.value.status == 400 and e.value.error_code == "invalid-request"
    check_uri("/api/v1/x?q=%zz", 8192)  # the query is not part of the path check


def test_error_body_uses_the_vendor_word() -> None:
    err = errors.vendor_error(502, "x-vendor-peer-unavailable", "peer down", peer="r1")
    assert err.body("medkit") == {"error_code": "vendor-error", "message": "peer down",
                                  "vendor_code": "x-medkit-peer-unavailable",
                                  "parameters": {"peer": "r1"}}
    assert errors.not_found("gone").body("vendor") == {"error_code": "resource-not-found",
                                                       "message": "gone"}


async def _h(request: object) -> None:  # pragma: no cover - never called
    return None


def test_registry_paths_and_operation_ids() -> None:
    reg = Registry("acme")
    reg.entity_routes("GET", "/data/{data_id}", _h, multi_segment=("data_id",))
    reg.add("GET", "/functions/{function_id}/x-vendor-graph", _h)
    paths = [r.path for r in reg]
    assert "/apps/{app_id}/data/{data_id}" in paths
    assert "/functions/{function_id}/x-acme-graph" in paths
    route = reg.routes[2]
    assert route.aiohttp_path() == "/api/v1/apps/{app_id:[^/]+}/data/{data_id:.+}"
    assert route.operation_id == "get_apps_by_app_id_data_by_data_id"
    assert len({r.operation_id for r in reg}) == len(reg.routes)


def test_openapi_projection_substitutes_ids_and_expands_items() -> None:
    reg = Registry()
    reg.entity_routes("GET", "", _h)
    reg.entity_routes("GET", "/data", _h)
    reg.entity_routes("GET", "/data/{data_id}", _h)
    doc = openapi.build(reg, vendor="vendor", version="0", with_roles=False)
    assert doc["openapi"] == "3.1.0" and "x-sovd-version" in doc
    out = openapi.project(doc, "/apps/a1", {"data_id": ["/x/y"]})
    assert out is not None
    assert set(out["paths"]) == {"/apps/a1", "/apps/a1/data", "/apps/a1/data/%2Fx%2Fy"}
    assert openapi.project(doc, "/nothing/here", {}) is None
    roles = openapi.build(reg, vendor="vendor", version="0", with_roles=True)
    op = roles["paths"]["/apps/{app_id}/data"]["get"]
    assert op["x-vendor-required-role"] == "viewer"
