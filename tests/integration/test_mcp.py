"""The built-in MCP server (docs/mcp.md) with the SDK's own clients against the demo robot:
every tool, roles and locks as in the REST API, errors with the REST reason, stdio, triage."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import wait_until
from tests.integration.mcp_support import (
    http_client,
    poll,
    run,
    stdio_client,
    tool,
    tool_error,
)
from tests.integration.test_security_helpers import SecureGateway, auth_settings

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "lidar_sensor", "actuator", "calibration", "long_calibration")
CODE = "LIDAR_RANGE_INVALID"
TEMP = "/powertrain/engine/temperature"
REQUIRED = {"list_entities", "get_entity", "list_faults", "get_fault", "clear_fault",
            "read_data", "write_data", "list_operations", "call_operation", "get_execution",
            "list_configurations", "get_configuration", "set_configuration", "list_logs",
            "list_recordings", "get_recording_summary", "fleet_status", "health", "lock",
            "unlock", "list_scripts", "run_script"}


class Gw(SecureGateway):
    tokens: dict[str, str]
    recording_id: str  # the lidar fault's recording, made once the recorder's buffer had data

    def rest(self, method: str, path: str, role: str = "admin", body: Any = None) -> Any:
        return self.request(method, path, body=body,
                            headers={"Authorization": f"Bearer {self.tokens[role]}"})

    def rest_json(self, path: str) -> Any:
        resp = self.rest("GET", path)
        return resp.json() if resp.status == 200 else None


def recording_with_history(g: Gw) -> str:
    """The lidar fault's recording made once the recorder's buffer holds data (one made when
    the fault came before the recorder had subscribed holds nothing): clear, let it reconfirm."""
    fault = f"/apps/lidar_sensor/faults/{CODE}"

    def health(check: Any) -> Any:
        return lambda: (body := g.rest_json("/health")) is not None and check(
            body["x-vendor-recorder"])

    wait_until(health(lambda r: r["buffer"]["messages"] >= 10), 60, "the recorder's buffer")
    wait_until(lambda: (b := g.rest_json(fault)) is not None
               and b["item"]["status"]["confirmedDTC"] == "1", 60, "the lidar fault confirmed")
    # a fault confirming again while a window is open joins that window, made before the clear
    wait_until(health(lambda r: r["open_windows"] == 0 and r["writing"] == 0), 60,
               "the recorder's windows written")
    bags = "/apps/lidar_sensor/bulk-data/rosbags"
    before = {d["id"] for d in g.rest_json(bags)["items"]}
    assert g.rest("DELETE", fault).status == 204
    fresh: list[str] = []

    def made() -> bool:
        body = g.rest_json(bags)
        fresh[:] = [d["id"] for d in (body or {}).get("items", ())
                    if CODE in d["x-vendor"]["fault_codes"] and d["id"] not in before]
        return bool(fresh)

    wait_until(made, 60, "the lidar fault's new recording")
    return fresh[0]


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gw]:
    tmp = tmp_path_factory.mktemp("mcp")
    scripts = tmp / "scripts"
    scripts.mkdir()
    (scripts / "hello.sh").write_text('echo "hello ${PARAM_WHO:-world}"\n')
    settings = auth_settings(tmp / "state", "all", f"scripts.scripts_dir={scripts}",
                             "scripts.allow_root=true", "snapshots.rosbag.enabled=true",
                             "snapshots.rosbag.duration_sec=1",
                             "snapshots.rosbag.duration_after_sec=0.5",
                             "discovery.refresh_debounce_ms=100")
    g = Gw(free_port(), domain, settings, tmp / "gateway.log").start()
    try:
        g.tokens = {r: g.token(f"{r}-client", f"{r}-secret")["access_token"]
                    for r in ("viewer", "operator", "configurator", "admin")}

        g.recording_id = recording_with_history(g)
        yield g
    finally:
        g.stop()


def test_tools_resources_and_prompt_are_listed(gw: Gw) -> None:
    async def go() -> None:
        async with http_client(gw.port, gw.tokens["viewer"]) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert REQUIRED <= set(tools) and len(tools) >= 20
            props = tools["list_faults"].input_schema["properties"]
            assert {"status", "severity", "entity", "robot"} <= set(props)
            assert tools["read_data"].input_schema["required"] == ["entity", "data_id"]
            assert tools["clear_fault"].annotations.destructive_hint
            assert tools["list_faults"].annotations.read_only_hint
            uris = {str(r.uri) for r in (await c.list_resources()).resources}
            assert uris == {"diag://entities", "diag://faults/active"}
            assert [p.name for p in (await c.list_prompts()).prompts] == ["triage"]
    run(go())


def test_read_tools_answer_concisely(gw: Gw) -> None:
    async def go() -> None:
        async with http_client(gw.port, gw.tokens["viewer"]) as c:
            ents = await tool(c, "list_entities", kind="apps", limit=2)
            assert ents["total"] >= 5 and len(ents["items"]) == 2 and ents["next_offset"] == 2
            every = await tool(c, "list_entities")
            assert "apps/temp_sensor" in {e["entity"] for e in every["items"]}
            ent = await tool(c, "get_entity", entity="apps/temp_sensor")
            assert ent["online"] is True and "configurations" in ent["capabilities"]
            faults = await tool(c, "list_faults", severity="error", entity="apps/lidar_sensor")
            assert CODE in {f["code"] for f in faults["items"]}
            assert all(f["severity"] == "ERROR" for f in faults["items"])
            fault = await tool(c, "get_fault", entity="apps/lidar_sensor", code=CODE)
            assert fault["code"] == CODE and fault["freeze_frames"]
            ranges = fault["freeze_frames"][0]["data"]["ranges"]
            assert len(ranges) == 21 and ranges[-1].startswith("... ")  # clipped, not dumped
            data = await tool(c, "read_data", entity="apps/temp_sensor", data_id=TEMP)
            assert data["type"] == "sensor_msgs/msg/Temperature"
            assert "temperature" in data["data"]
            items = await tool(c, "list_data", entity="apps/temp_sensor")
            assert TEMP in {d["id"] for d in items["items"]}
            ops = await tool(c, "list_operations", entity="apps/long_calibration")
            assert ops["items"][0]["kind"] == "action" and ops["items"][0]["request"]
            confs = await tool(c, "list_configurations", entity="apps/temp_sensor")
            assert "max_temp" in {i["id"] for i in confs["items"]}
            conf = await tool(c, "get_configuration", entity="apps/temp_sensor",
                              config_id="publish_rate")
            assert conf["value"] == 2.0
            async def some_logs() -> dict[str, Any] | None:
                got = await tool(c, "list_logs", entity="apps/temp_sensor", limit=3)
                return got if got["items"] else None

            logs = await poll(some_logs, "log entries")
            assert len(logs["items"]) <= 3 and "message" in logs["items"][0]
            health = await tool(c, "health")
            assert health["status"] in ("healthy", "degraded")
            fleet = await tool(c, "fleet_status")
            assert fleet["robots"] == [] and fleet["local_faults"] >= 1
            assert (await tool(c, "list_locks", entity="apps/temp_sensor"))["items"] == []
            scripts = await tool(c, "list_scripts", entity="apps/temp_sensor")
            assert "hello" in {s["id"] for s in scripts["items"]}
    run(go())


def test_recording_summary_without_download(gw: Gw) -> None:
    async def go() -> None:
        async with http_client(gw.port, gw.tokens["viewer"]) as c:
            recs = await tool(c, "list_recordings", entity="apps/lidar_sensor")
            rec = next(r for r in recs["items"] if r["id"] == gw.recording_id)
            summary = await tool(c, "get_recording_summary", entity="apps/lidar_sensor",
                                 recording_id=rec["id"], around_sec=1.0)
            assert summary["fault_codes"] == rec["fault_codes"]
            topics = {t["topic"] for t in summary["topics"]}
            assert "/perception/lidar/scan" in topics
            assert summary["message_count"] > 0 and summary["time_range"]["start"]
            around = {t["topic"]: t for t in summary["around_fault"]["topics"]}
            assert around["/perception/lidar/scan"]["before"] > 0
            missing = await tool_error(c, "get_recording_summary", entity="apps/lidar_sensor",
                                       recording_id="nope")
            assert "no recording 'nope'" in missing
    run(go())


def test_unknown_entity_answers_the_rest_reason(gw: Gw) -> None:
    rest = gw.rest("GET", "/apps/nope").json()["message"]

    async def go() -> None:
        async with http_client(gw.port, gw.tokens["viewer"]) as c:
            text = await tool_error(c, "get_entity", entity="apps/nope")
            assert rest in text and "404" in text
            bad = await tool_error(c, "get_entity", entity="robots/nope")
            assert "expected <type>/<id>" in bad
    run(go())


def test_roles_are_the_rest_roles(gw: Gw) -> None:
    rest = gw.rest("PUT", "/apps/temp_sensor/configurations/max_temp", "viewer",
                   {"data": 97.0})
    assert rest.status == 403

    async def go() -> None:
        async with http_client(gw.port, gw.tokens["viewer"]) as c:
            text = await tool_error(c, "set_configuration", entity="apps/temp_sensor",
                                    config_id="max_temp", value=97.0)
            assert rest.json()["message"] in text and text.count("403") == 1
            assert "may not DELETE" in await tool_error(
                c, "clear_fault", entity="apps/lidar_sensor", code=CODE)
        async with http_client(gw.port, gw.tokens["configurator"]) as c:
            done = await tool(c, "set_configuration", entity="apps/temp_sensor",
                              config_id="max_temp", value=97.0)
            assert done["value"] == 97.0
    run(go())
    assert gw.rest("GET", "/apps/temp_sensor/configurations/max_temp").json()["value"] == 97.0


def test_anonymous_session_is_refused_when_auth_covers_reads(gw: Gw) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    conn.request("POST", "/mcp", body=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    conn.close()
    assert resp.status == 401 and answer["error_code"] == "unauthorized"
    assert "Authorization: Bearer" in answer["message"]

    for method in ("GET", "DELETE"):  # stateless: no event stream, no session to end
        conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
        conn.request(method, "/mcp", headers={
            "Authorization": f"Bearer {gw.tokens['viewer']}", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        resp.read()
        conn.close()
        assert resp.status == 405 and resp.getheader("Allow") == "POST", method

    async def go() -> None:
        async with http_client(gw.port, None) as c:
            await c.list_tools()
    with pytest.raises(BaseException):  # noqa: B017 (the SDK's client: HTTP 401 surfaces)
        run(go())


def test_operator_writes_operations_and_scripts(gw: Gw) -> None:
    async def go() -> None:
        async with http_client(gw.port, gw.tokens["operator"]) as c:
            wrote = await tool(c, "write_data", entity="apps/actuator",
                               data_id="/chassis/brakes/command", value={"data": 0.5})
            assert wrote["status"] == "published"
            called = await tool(c, "call_operation", entity="apps/calibration",
                                operation="calibrate")
            assert called["parameters"]["success"] is True
            started = await tool(c, "call_operation", entity="apps/long_calibration",
                                 operation="long_calibration", parameters={"order": 3})
            exec_id = started["id"]

            async def finished() -> dict[str, Any] | None:
                ex = await tool(c, "get_execution", entity="apps/long_calibration",
                                operation="long_calibration", execution_id=exec_id)
                return ex if ex.get("status") not in ("running", "pending") else None

            final = await poll(finished, "the action's end", timeout=40)
            assert final["status"] == "completed", final
            ran = await tool(c, "run_script", entity="apps/temp_sensor", script_id="hello",
                             parameters={})
            assert ran["id"] and ran.get("status") in ("running", "completed", "prepared")
            await tool(c, "clear_fault", entity="apps/lidar_sensor", code=CODE)
    run(go())


def test_locks_hold_across_clients(gw: Gw) -> None:
    async def go() -> None:
        async with http_client(gw.port, gw.tokens["admin"], {"X-Client-Id": "agent-a"}) as a, \
                http_client(gw.port, gw.tokens["configurator"], {"X-Client-Id": "agent-b"}) as b:
            held = await tool(a, "lock", entity="apps/temp_sensor", expiration_sec=60)
            try:
                text = await tool_error(b, "set_configuration", entity="apps/temp_sensor",
                                        config_id="min_temp", value=80.0)
                rest = gw.request("PUT", "/apps/temp_sensor/configurations/min_temp",
                                  body={"data": 80.0}, headers={
                                      "Authorization": f"Bearer {gw.tokens['configurator']}",
                                      "X-Client-Id": "agent-b"})
                assert rest.json()["message"] in text
                listed = await tool(b, "list_locks", entity="apps/temp_sensor")
                assert [lk["id"] for lk in listed["items"]] == [held["id"]]
            finally:
                await tool(a, "unlock", entity="apps/temp_sensor", lock_id=held["id"])
            done = await tool(b, "set_configuration", entity="apps/temp_sensor",
                              config_id="min_temp", value=80.0)
            assert done["value"] == 80.0
    run(go())


def test_resources_and_triage_prompt_end_to_end(gw: Gw) -> None:
    async def go() -> None:
        async with http_client(gw.port, gw.tokens["viewer"]) as c:
            tree = json.loads((await c.read_resource("diag://entities")).contents[0].text)
            assert "apps/lidar_sensor" in {e["entity"] for e in tree["apps"]}
            active = json.loads((await c.read_resource("diag://faults/active")).contents[0].text)
            assert active["total"] >= 1
            prompt = await c.get_prompt("triage", {"robot": ""})
            text = prompt.messages[0].content.text
            assert "fleet_status" in text and "get_fault" in text and "Current faults" in text
            # the steps the prompt names, as an agent would take them
            faults = await tool(c, "list_faults", entity="apps/lidar_sensor", status="all")
            worst = faults["items"][0]
            entity = "apps/lidar_sensor"
            detail = await tool(c, "get_fault", entity=entity, code=worst["code"])
            assert detail["code"] == worst["code"]
            recs = await tool(c, "list_recordings", entity=entity)
            assert recs["total"] >= 1
            logs = await tool(c, "list_logs", entity=entity)
            assert "items" in logs
    run(go())


def test_stdio_bridge_with_a_token_file(gw: Gw, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(gw.tokens["viewer"] + "\n")

    async def go() -> None:
        async with stdio_client(gw.port, token_file) as c:
            assert REQUIRED <= {t.name for t in (await c.list_tools()).tools}
            health = await tool(c, "health")
            assert health["status"] in ("healthy", "degraded")
            ent = await tool(c, "get_entity", entity="apps/temp_sensor")
            assert ent["entity"] == "apps/temp_sensor"
            text = await tool_error(c, "set_configuration", entity="apps/temp_sensor",
                                    config_id="max_temp", value=90.0)
            assert "Role 'viewer' may not PUT" in text
        async with stdio_client(gw.port) as anon:
            assert "401" in await tool_error(anon, "health")
    run(go())
