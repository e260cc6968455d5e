"""The MCP server's pure parts (gateway/mcp): entity paths, bounded answers, fleet summary,
the stdio bridge's arguments, the lazy SDK import, and tools over a canned REST API."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.mcp import shape
from gateway.mcp.rest import EntityPathError, Rest, RestError, entity_path, error_of
from gateway.mcp.stdio import base_of, token_of


@pytest.mark.parametrize(("text", "path"), [
    ("apps/temp_sensor", "/apps/temp_sensor"), ("/components/vm/", "/components/vm"),
    ("/api/v1/areas/powertrain", "/areas/powertrain"),
    ("functions/a b", "/functions/a%20b"), ("apps/robot2__lifecycle", "/apps/robot2__lifecycle"),
])
def test_entity_paths(text: str, path: str) -> None:
    assert entity_path(text) == path


@pytest.mark.parametrize("text", ["temp_sensor", "robots/r1", "apps/", "apps/a/b", ""])
def test_entity_paths_refused_say_the_form(text: str) -> None:
    with pytest.raises(EntityPathError, match="expected <type>/<id>"):
        entity_path(text)


def test_rest_errors_keep_the_api_message() -> None:
    err = error_of(404, b'{"error_code":"resource-not-found","message":"App not found: \'x\'"}')
    assert (err.status, err.error_code, err.message) == (404, "resource-not-found",
                                                         "App not found: 'x'")
    assert str(err) == "404 resource-not-found: App not found: 'x'"
    assert error_of(502, b"<html>" + b"x" * 2000).message.startswith("<html>")
    assert len(error_of(502, b"x" * 2000).message) == 500
    assert error_of(500, b"").message == "HTTP 500"


def test_clip_bounds_lists_strings_and_depth() -> None:
    out = shape.clip({"ranges": list(range(500)), "s": "x" * 1000,
                      "deep": {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}})
    assert len(out["ranges"]) == shape.MAX_LIST + 1
    assert out["ranges"][-1] == f"... {500 - shape.MAX_LIST} more of 500"
    assert out["s"].endswith("... (1000 chars)") and len(out["s"]) < 400
    assert out["deep"]["a"]["b"]["c"]["d"]["e"] == "{1 keys}"
    many = shape.clip({str(i): i for i in range(100)})
    assert len(many) == shape.MAX_KEYS + 1 and many["..."] == "60 more keys"


def test_page() -> None:
    assert shape.page(list(range(5)), 0, 2) == {"total": 5, "offset": 0, "items": [0, 1],
                                                 "next_offset": 2}
    assert shape.page(list(range(5)), 4, 2)["next_offset"] is None
    assert shape.page([], 0, 10) == {"total": 0, "offset": 0, "items": [], "next_offset": None}


FAULTS = [
    {"fault_code": "A", "severity": "ERROR", "status": "CONFIRMED", "message": "a",
     "x-vendor": {"peer": "r1"}},
    {"fault_code": "B", "severity": "WARN", "status": "CONFIRMED", "message": "b",
     "x-vendor": {"peer": "r1"}},
    {"fault_code": "C", "severity": "ERROR", "status": "CONFIRMED", "message": "c",
     "x-medkit": {"peer": "r2"}},
    {"fault_code": "D", "severity": "ERROR", "status": "CONFIRMED", "message": "d"},
]


def test_fault_filters_and_summary() -> None:
    assert [f["fault_code"] for f in FAULTS if shape.fault_matches(f, "error", None)] == [
        "A", "C", "D"]
    assert [f["fault_code"] for f in FAULTS if shape.fault_matches(f, None, "r1")] == ["A", "B"]
    assert [f["fault_code"] for f in FAULTS if shape.fault_matches(f, None, "local")] == ["D"]
    assert shape.fault_summary(FAULTS[2]) == {"code": "C", "severity": "ERROR",
                                              "status": "CONFIRMED", "message": "c",
                                              "robot": "r2"}


def test_fleet_status_counts_faults_per_robot() -> None:
    health = {"status": "healthy", "peers": [{"name": "r1", "status": "online"},
                                             {"name": "r3", "status": "offline"}]}
    out = shape.fleet_status(health, FAULTS)
    assert out["robots"] == [
        {"robot": "r1", "online": True, "status": "online", "faults": 2,
         "by_severity": {"ERROR": 1, "WARN": 1}},
        {"robot": "r3", "online": False, "status": "offline", "faults": 0, "by_severity": {}}]
    assert out["local_faults"] == 1 and out["total_faults"] == 4
    assert out["other_sources"] == {"r2": 1}  # behind a site primary


def test_entity_summary_names_robots() -> None:
    item = {"id": "lidar", "name": "lidar", "type": "app",
            "x-vendor": {"is_online": False, "component_id": "vm",
                         "contributors": ["local", "robot7"]}}
    assert shape.entity_summary(item) == {"entity": "apps/lidar", "name": "lidar",
                                          "online": False, "component": "vm",
                                          "robots": ["robot7"]}


def test_stdio_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert base_of("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert base_of("https://gw:8443/api/v1/") == "https://gw:8443"
    for bad in ("ftp://x", "127.0.0.1:8080", "http://gw/other"):
        with pytest.raises(ValueError, match="--gateway"):
            base_of(bad)
    token = tmp_path / "t"
    token.write_text("abc.def\nignored\n")
    assert token_of(str(token)) == "abc.def"
    monkeypatch.setenv("DIAG_GATEWAY_TOKEN", "env-token")
    assert token_of(None) == "env-token"
    monkeypatch.delenv("DIAG_GATEWAY_TOKEN")
    assert token_of(None) is None


def test_the_gateway_does_not_import_the_sdk_until_mcp_is_used() -> None:
    child = ("import sys\nfrom gateway.app import build_registry, make_app\n"
             "import gateway.mcp, gateway.mcp.service\nbuild_registry('vendor', set())\n"
             "print(sorted(m for m in ('mcp', 'starlette', 'mcp_types', 'httpx2', 'uvicorn')"
             " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                         timeout=120, check=True).stdout.strip()
    assert out == "[]"


class CannedRest(Rest):
    """A Rest answering from a table of (method, path) -> body or RestError."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        super().__init__(session=None, base="http://x")  # type: ignore[arg-type]
        self.answers = answers
        self.seen: list[tuple[str, str, Any]] = []

    async def call(self, method: str, path: str, *, params: Any = None, body: Any = None,
                   tool: str = "") -> Any:
        self.seen.append((method, path, body))
        answer = self.answers.get((method, path))
        if isinstance(answer, RestError):
            raise answer
        if answer is None:
            raise RestError(404, "resource-not-found", f"nothing at {path}")
        return answer


def _call(rest: CannedRest, name: str, args: dict[str, Any]) -> Any:
    from mcp import Client

    from gateway.mcp.env import ToolEnv
    from gateway.mcp.server import build

    async def go() -> Any:
        async with Client(build(ToolEnv(lambda: rest, 10))) as client:
            return await client.call_tool(name, args)

    return asyncio.run(go())


def test_a_recording_a_primary_does_not_list_is_found_in_its_fault_detail() -> None:
    snap = {"type": "rosbag", "name": "rec_1.mcap", "size_bytes": 10, "duration_sec": 6.0,
            "format": "mcap", "bulk_data_uri": "/apps/lidar/bulk-data/rosbags/rec_1",
            "x-vendor": {"captured_at": "2026-01-01T00:00:00.000Z"}}
    rest = CannedRest({
        ("GET", "/apps/lidar/bulk-data/rosbags"): {"items": []},
        ("GET", "/apps/lidar/faults"): {"items": [{"fault_code": "F1"}, {"fault_code": "F2"}]},
        ("GET", "/apps/lidar/faults/F1"): {"item": {}, "environment_data": {"snapshots": []}},
        ("GET", "/apps/lidar/faults/F2"): {"item": {}, "environment_data": {
            "snapshots": [snap]}},
    })
    result = _call(rest, "get_recording_summary", {"entity": "apps/lidar",
                                                   "recording_id": "rec_1"})
    assert not result.is_error
    assert result.structured_content == {
        "id": "rec_1", "name": "rec_1.mcap", "size": 10, "created": "2026-01-01T00:00:00.000Z",
        "fault_codes": ["F2"], "duration_sec": 6.0, "format": "mcap",
        "bulk_data_uri": "/apps/lidar/bulk-data/rosbags/rec_1", "listed_by": "fault detail"}


def test_tool_errors_carry_the_rest_reason_and_writes_their_body() -> None:
    rest = CannedRest({("PUT", "/apps/a/configurations/p"): RestError(
        403, "forbidden", "Role 'viewer' may not PUT /apps/{app_id}/configurations/"
                          "{param_name}; it needs 'configurator'")})
    result = _call(rest, "set_configuration", {"entity": "apps/a", "config_id": "p",
                                               "value": 3})
    assert result.is_error
    assert "403 forbidden: Role 'viewer' may not PUT" in result.content[0].text
    assert rest.seen == [("PUT", "/apps/a/configurations/p", {"data": 3})]
    bad = _call(rest, "get_entity", {"entity": "nope"})
    assert bad.is_error and "expected <type>/<id>" in bad.content[0].text
    assert rest.seen[1:] == []  # refused before any request


@pytest.mark.parametrize(("flag", "methods"), [("true", ["POST"]), ("false", [])])
def test_mcp_enabled_routes_post_mcp_only(flag: str, methods: list[str],
                                          tmp_path: Path) -> None:
    from gateway.app import make_app
    from gateway.settings.config import load

    app = make_app(load(None, [f"mcp.enabled={flag}", f"state_dir={tmp_path}"]))
    assert [r.method for r in app.router.routes()
            if r.resource is not None and r.resource.canonical == "/mcp"] == methods
