"""Lifecycle control in process (the lifecycle and status handlers): a managed node of the
fake robot driven through lifecycle_msgs GetState and ChangeState by the built-in provider."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import ACTIVE, FINALIZED, UNCONFIGURED, FakeNode, default_nodes

APP = "/api/v1/apps/controller"
CONTROLLER = "/chassis/brakes/controller"


def _robot(state: int = UNCONFIGURED) -> list[FakeNode]:
    return [*default_nodes(), FakeNode("controller", "/chassis/brakes", lifecycle=state)]


def _node(gw: Gw) -> FakeNode:
    return next(n for n in gw.nodes if n.name == "controller")


async def settled(gw: Gw) -> dict[str, Any]:
    """The app's status once its transition finished."""
    body: dict[str, Any] = {}
    for _ in range(200):
        status, body = await gw.json("GET", f"{APP}/status")
        assert status == 200, body
        if body[gw.xv]["lifecycle"].get("transition", {}).get("status") != "inProgress":
            return body
        await asyncio.sleep(0.01)
    raise AssertionError(f"the transition did not finish: {body}")


def test_start_a_managed_node(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/status")
        assert (status, body["status"]) == (200, "notReady")
        assert body[gw.xv]["lifecycle"] == {"state": "unconfigured", "state_id": UNCONFIGURED}
        assert body["start"] == f"{APP}/status/start"  # the transitions it offers
        status, body = await gw.json("PUT", f"{APP}/status/start", json={})
        assert status == 202, body
        assert (body["id"], body["transition"]) == ("controller", "start")
        (record,) = body["apps"]
        assert (record["from_state"], record["steps"]) == ("unconfigured",
                                                          ["configure", "activate"])
        body = await settled(gw)
        assert body["status"] == "ready"
        assert body[gw.xv]["lifecycle"]["state_id"] == ACTIVE
        assert body[gw.xv]["lifecycle"]["transition"]["done"] == ["configure", "activate"]
        assert _node(gw).lifecycle == ACTIVE  # the node was driven there
        # starting an active node has nothing to do: completed at once
        status, body = await gw.json("PUT", f"{APP}/status/start", json={})
        assert (status, body["status"], body["apps"][0]["steps"]) == (202, "completed", [])

    gateway(scenario, nodes=_robot())


def test_shutdown_then_start_is_refused(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("PUT", f"{APP}/status/shutdown", json={})
        assert status == 202
        assert body["apps"][0]["steps"] == ["deactivate", "cleanup", "unconfigured_shutdown"]
        body = await settled(gw)
        assert body[gw.xv]["lifecycle"]["state_id"] == FINALIZED
        assert _node(gw).lifecycle == FINALIZED
        body = await gw.error("PUT", f"{APP}/status/start", 409, json={})
        assert body["error_code"] == "precondition-not-fulfilled"
        assert body["message"] == (f"Cannot start '{CONTROLLER}': the node is finalized: a "
                                   "finalized lifecycle node cannot be started again; restart "
                                   "its process")
        assert body["parameters"] == {"entity_id": "controller", "transition": "start"}

    gateway(scenario, nodes=_robot(ACTIVE))


def test_a_component_drives_its_managed_apps(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("PUT", "/api/v1/components/testhost/status/start",
                                     json={})
        assert status == 202, body
        assert [a["app_id"] for a in body["apps"]] == ["controller"]  # plain nodes left out
        for _ in range(200):
            if _node(gw).lifecycle == ACTIVE:
                break
            await asyncio.sleep(0.01)
        assert _node(gw).lifecycle == ACTIVE

    gateway(scenario, nodes=_robot())


def test_a_managed_node_that_does_not_answer(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        _node(gw).online = False
        body = await gw.error("PUT", f"{APP}/status/start", 503, json={})
        assert (body["error_code"], body["vendor_code"]) == (
            "vendor-error", f"{gw.xv}-ros2-node-unavailable")
        assert body["message"] == (f"'{CONTROLLER}' did not report its lifecycle state: no "
                                   f"server for {CONTROLLER}/get_state")
        assert body["parameters"] == {"entity_id": "controller"}
        assert _node(gw).lifecycle == UNCONFIGURED

    gateway(scenario, nodes=_robot())


def test_force_shutdown_and_force_restart(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.put(f"{APP}/status/force-restart", json={}) as resp:
            assert resp.status == 202, await resp.text()
            assert resp.headers["Location"] == f"{APP}/status"
            body = await resp.json()
        assert body["transition"] == "force-restart"
        body = await settled(gw)
        assert body[gw.xv]["lifecycle"]["state_id"] == ACTIVE
        assert _node(gw).lifecycle == ACTIVE
        status, body = await gw.json("PUT", f"{APP}/status/force-shutdown", json={})
        assert status == 202, body
        assert body["apps"][0]["steps"] == ["active_shutdown"]
        body = await settled(gw)
        assert body[gw.xv]["lifecycle"]["transition"]["done"] == ["active_shutdown"]
        assert _node(gw).lifecycle == FINALIZED

    gateway(scenario, nodes=_robot(ACTIVE))
