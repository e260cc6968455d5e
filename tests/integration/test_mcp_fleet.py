"""The MCP server on a fleet primary (docs/mcp.md): which robot has which fault, its data and
recording, through the merged fleet, with the SDK's streamable HTTP and stdio clients."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.domains import _domains
from tests.harness import Gateway
from tests.integration.mcp_support import http_client, poll, run, stdio_client, tool, tool_error

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "lidar_sensor")
CODE = "LIDAR_RANGE_INVALID"
ROBOT = "robot7"


@dataclass
class Fleet:
    primary: Gateway
    robot: Gateway


@pytest.fixture(scope="module")
def fleet(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("mcp_fleet")
    peer = Gateway(free_port(), domain, [
        f"state_dir={tmp / 'robot'}", "snapshots.rosbag.enabled=true",
        "snapshots.rosbag.duration_sec=1", "snapshots.rosbag.duration_after_sec=0.5"],
        tmp / "robot.log").start()
    primary: Gateway | None = None
    try:
        # the primary's own domain has no nodes: every entity it serves is the robot's
        primary = Gateway(free_port(), next(_domains), [
            "aggregation.enabled=true", f"aggregation.peer_urls=[http://127.0.0.1:{peer.port}]",
            f"aggregation.peer_names=[{ROBOT}]", "aggregation.health_interval_ms=200",
            "aggregation.refresh_interval_ms=200", f"state_dir={tmp / 'primary'}"],
            tmp / "primary.log").start()
        primary.wait_for("/apps", lambda b: {"temp_sensor", "lidar_sensor"} <= {
            i["id"] for i in b["items"]}, timeout=40)
        primary.wait_for("/faults", lambda b: CODE in {f["fault_code"] for f in b["items"]},
                         timeout=40)
        yield Fleet(primary, peer)
    finally:
        if primary is not None:
            primary.stop()
        peer.stop()


def test_which_robot_has_which_fault(fleet: Fleet) -> None:
    async def go() -> None:
        async with http_client(fleet.primary.port) as c:
            status = await tool(c, "fleet_status")
            [robot] = status["robots"]
            assert robot["robot"] == ROBOT and robot["online"] is True
            assert robot["faults"] >= 1 and robot["by_severity"]["ERROR"] >= 1
            faults = await tool(c, "list_faults", robot=ROBOT, severity="ERROR")
            assert CODE in {f["code"] for f in faults["items"]}
            assert {f["robot"] for f in faults["items"]} == {ROBOT}
            assert (await tool(c, "list_faults", robot="robot9"))["items"] == []
            health = await tool(c, "health")
            assert health["robots"][0]["name"] == ROBOT
    run(go())


def test_entities_data_and_fault_through_the_primary(fleet: Fleet) -> None:
    async def go() -> None:
        async with http_client(fleet.primary.port) as c:
            ents = await tool(c, "list_entities", kind="apps")
            assert {"apps/temp_sensor", "apps/lidar_sensor"} <= {e["entity"]
                                                                 for e in ents["items"]}
            mine = await tool(c, "list_entities", kind="apps", robot=ROBOT)
            assert {"apps/temp_sensor", "apps/lidar_sensor"} <= {e["entity"]
                                                                 for e in mine["items"]}
            assert (await tool(c, "list_entities", robot="robot9"))["items"] == []
            ent = await tool(c, "get_entity", entity="apps/lidar_sensor")
            assert ent["robots"] == [ROBOT]
            fault = await tool(c, "get_fault", entity="apps/lidar_sensor", code=CODE)
            assert fault["code"] == CODE and fault["freeze_frames"]
            data = await tool(c, "read_data", entity="apps/temp_sensor",
                              data_id="/powertrain/engine/temperature")
            assert "temperature" in data["data"]
            conf = await tool(c, "get_configuration", entity="apps/lidar_sensor",
                              config_id="min_range")
            assert conf["value"] == 10.0
            rest = fleet.primary.get("/apps/nope").json()["message"]
            assert rest in await tool_error(c, "get_entity", entity="apps/nope")
    run(go())


def test_recording_of_the_robots_fault(fleet: Fleet) -> None:
    async def go() -> None:
        async with http_client(fleet.primary.port) as c:
            async def recorded() -> list[dict[str, Any]]:
                fault = await tool(c, "get_fault", entity="apps/lidar_sensor", code=CODE)
                return fault["recordings"]  # type: ignore[no-any-return]

            [bag] = await poll(recorded, "the robot's recording", timeout=40)
            rec_id = bag["bulk_data_uri"].rsplit("/", 1)[1]
            summary = await tool(c, "get_recording_summary", entity="apps/lidar_sensor",
                                 recording_id=rec_id)
            assert CODE in summary["fault_codes"] and summary["duration_sec"] > 0
    run(go())


def test_triage_prompt_for_a_robot_over_stdio(fleet: Fleet) -> None:
    async def go() -> None:
        async with stdio_client(fleet.primary.port) as c:
            prompt = await c.get_prompt("triage", {"robot": ROBOT})
            text = prompt.messages[0].content.text
            assert f"robot='{ROBOT}'" in text and CODE in text
            status = await tool(c, "fleet_status")
            assert status["robots"][0]["robot"] == ROBOT
            faults = await tool(c, "list_faults", robot=ROBOT)
            worst = next(f for f in faults["items"] if f["code"] == CODE)
            detail = await tool(c, "get_fault", entity="apps/lidar_sensor", code=worst["code"])
            assert detail["freeze_frames"]
    run(go())
