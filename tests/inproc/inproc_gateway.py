"""The in-process gateway: `gateway.app.make_app` served by aiohttp's test client, its ROS
side a fake robot (inproc_robot.py) attached through make_app's `ros` lifecycle, which
starts the gateway's feature services in their declared order (app.feature_services).

A test takes the `gateway` fixture (conftest.py, parametrized over both wire profiles,
`spec` and `medkit`) and runs one scenario against it:

    def test_x(gateway: Runner) -> None:
        async def scenario(gw: Gw) -> None:
            status, body = await gw.json("GET", "/api/v1/apps")
        gateway(scenario)

Real: the registry and middleware, the entity cache over a graph snapshot (runtime
discovery), the parameter store, /rosout buffer, fault manager and its SQLite store, the
lock, script, push, upload and plugin services. Fake (inproc_robot.py): the ROS bridge and its
nodes, the sample pool, the graph poller, the service caller (the nodes' parameter services
and two user services) and the action manager (goals accepted or rejected by `order`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from gateway.app import feature_services, make_app
from gateway.discovery.cache import EntityCache
from gateway.discovery.runtime import HostInfo
from gateway.http.state import STATE, GatewayState
from gateway.settings.config import load
from tests.inproc.inproc_robot import (
    HOST,
    FakeActions,
    FakeBridge,
    FakeCaller,
    FakeNode,
    FakePoller,
    FakePool,
    default_nodes,
    snapshot,
)

PROFILES = ("spec", "medkit")
# The fault bridges subscribe to rclpy message types; reports come through submit() here.
BASE_SETTINGS = ("faults.rosout_bridge.enabled=false", "faults.action_bridge.enabled=false",
                 "faults.diagnostics_bridge.enabled=false", "discovery.mode=runtime_only",
                 # a node that did not answer is asked again at once unless a test says not
                 "parameter_negative_cache_sec=0")


@dataclass
class Gw:
    """One running in-process gateway."""

    client: TestClient
    state: GatewayState
    profile: str
    bridge: FakeBridge
    pool: FakePool
    caller: FakeCaller
    actions: FakeActions
    nodes: list[FakeNode]

    @property
    def xv(self) -> str:
        """The vendor key of the profile (x-vendor or x-medkit)."""
        return self.state.xv

    async def json(self, method: str, path: str | URL, **kw: Any) -> tuple[int, Any]:
        """Status and JSON body of one request (None when the body is empty); a path given
        as `URL(..., encoded=True)` is sent as it is."""
        async with self.client.request(method, path, **kw) as resp:
            text = await resp.text()
            if not text:
                return resp.status, None
            assert resp.content_type.endswith("json"), (resp.status, text)
            return resp.status, await resp.json(content_type=None)

    async def error(self, method: str, path: str | URL, status: int, **kw: Any) -> dict[str, Any]:
        """The error body of a request that must answer `status`."""
        got, body = await self.json(method, path, **kw)
        assert got == status, (method, path, got, body)
        assert isinstance(body, dict) and body.get("error_code"), body
        return body

    def regraph(self) -> None:
        """The fake nodes changed: the cache rebuilds from a new snapshot."""
        self.state.cache.apply(snapshot(self.nodes))


Scenario = Callable[[Gw], Awaitable[None]]
Runner = Callable[..., None]


def robot_lifecycle(nodes: list[FakeNode], bridge: FakeBridge, pool: FakePool,
                    caller: FakeCaller, actions: FakeActions
                    ) -> Callable[[web.Application], AsyncIterator[None]]:
    """The ROS side of app._ros_lifecycle over the fake robot (make_app's `ros`)."""

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        from gateway.ros.calls.parameters import ParameterStore
        from gateway.ros.topics.rosout import RosoutLog

        state = app[STATE]
        s = state.settings
        bridge.start(asyncio.get_running_loop())
        cache = EntityCache(s["entity_cache.capacity"], HostInfo(HOST, "Linux", "x86_64"),
                            events=state.events)
        cache.apply(snapshot(nodes))
        rosout = RosoutLog(bridge, s["logs.buffer_size"])  # type: ignore[arg-type]
        rosout.publish_records(state.events)  # as app._ros_side: log triggers hear the bus
        parameters = ParameterStore(caller, s["parameter_service_timeout_sec"],  # type: ignore[arg-type]
                                    s["parameter_negative_cache_sec"])
        state.attach_ros(bridge, pool, cache, FakePoller(), caller,  # type: ignore[arg-type]
                         actions, parameters, rosout)  # type: ignore[arg-type]
        await rosout.start()
        try:
            async with feature_services(app):  # the gateway's own services, in its order
                yield
        finally:
            await rosout.stop()
            bridge.close()

    return lifecycle


def run_gateway(tmp: Path, profile: str, scenario: Scenario, settings: tuple[str, ...] = (),
                nodes: list[FakeNode] | None = None) -> None:
    """Build the app over a fresh fake robot, serve it in process, run the scenario."""
    nodes = default_nodes() if nodes is None else nodes
    bridge, pool, caller, actions = FakeBridge(), FakePool(), FakeCaller(nodes), FakeActions()

    async def go() -> None:
        cfg = load(None, [f"state_dir={tmp}", f"api.profile={profile}", *BASE_SETTINGS,
                          *settings])
        app = make_app(cfg, ros=robot_lifecycle(nodes, bridge, pool, caller, actions))
        async with TestClient(TestServer(app)) as client:
            await scenario(Gw(client, app[STATE], profile, bridge, pool, caller, actions,
                              nodes))

    asyncio.run(go())
