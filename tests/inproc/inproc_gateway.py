"""The in-process gateway: `gateway.app.make_app` served by aiohttp's test client, its ROS
side a fake robot (inproc_robot.py) attached through make_app's `ros` lifecycle, which
starts the gateway's feature services in their declared order (app.feature_services).

A test takes the `gateway` fixture (conftest.py, parametrized over both wire profiles,
`spec` and `medkit`) and runs one scenario against it:

    def test_x(gateway: Runner) -> None:
        async def scenario(gw: Gw) -> None:
            status, body = await gw.json("GET", "/api/v1/apps")
        gateway(scenario)

A scenario may run behind a manifest (`manifest=` its YAML text, `mode=` hybrid or
manifest_only, `inventory=` an asset CSV): the files are written beside the gateway's state
and the real manifest discovery builds the entity set, linking the fake nodes in hybrid mode.
Its file watch is off (a reload on a file change is a real gateway's test); a test that wants
it sets `discovery.manifest.watch_interval_ms`.

Real: the registry and middleware, the entity cache over a graph snapshot (runtime
discovery, or the manifest's areas, components, apps and functions), the parameter store,
/rosout buffer, fault manager and its SQLite store, the lock, script, push, upload and plugin
services. Fake (inproc_robot.py): the ROS bridge and its nodes, the sample pool, the graph
poller, the service caller (the nodes' parameter services and two user services) and the
action manager (goals accepted or rejected by `order`). inproc_demo.py: the demo robot's
nodes, which the shipped deploy/demo_manifest.yaml links.
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
from gateway.discovery.keys import DISCOVERY
from gateway.discovery.runtime import HostInfo
from gateway.faults.keys import FAULT_SERVICE
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
MODES = ("hybrid", "manifest_only")


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

    async def report_faults(self, *reports: Any) -> None:
        """Hand fault reports (faults.model.Report) to the fault manager; wait for their commit."""
        faults = self.client.app[FAULT_SERVICE]
        faults.submit(reports)
        for _ in range(300):  # the flush runs on the next loop turns
            await asyncio.sleep(0.01)
            if faults.stats["reports_applied"] >= faults.stats["reports_received"]:
                break
        await faults.settled()

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
        discovery = app.get(DISCOVERY)
        if discovery is not None:  # as app._ros_side: the cache builds from the manifest
            discovery.attach(cache, state.events)
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
            if discovery is not None:
                await discovery.stop()
            bridge.close()

    return lifecycle


def manifest_settings(tmp: Path, manifest: str | None, mode: str, inventory: str | None
                      ) -> list[str]:
    """Write the manifest (and inventory CSV) under `tmp`; the settings that load them."""
    if manifest is None:
        assert inventory is None, "an inventory CSV is read only beside a manifest"
        return []
    assert mode in MODES, mode
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "manifest.yaml"
    path.write_text(manifest)
    out = [f"discovery.mode={mode}", f"discovery.manifest_path={path}",
           "discovery.manifest.watch_interval_ms=0"]
    if inventory is not None:
        (tmp / "inventory.csv").write_text(inventory)
        out.append(f"discovery.inventory.csv_path={tmp / 'inventory.csv'}")
    return out


def run_gateway(tmp: Path, profile: str, scenario: Scenario, settings: tuple[str, ...] = (),
                nodes: list[FakeNode] | None = None, manifest: str | None = None,
                mode: str = "hybrid", inventory: str | None = None) -> None:
    """Build the app over a fresh fake robot (behind `manifest` when given), serve it in
    process, run the scenario."""
    nodes = default_nodes() if nodes is None else nodes
    bridge, pool, caller, actions = FakeBridge(), FakePool(), FakeCaller(nodes), FakeActions()
    found = manifest_settings(tmp, manifest, mode, inventory)

    async def go() -> None:
        cfg = load(None, [f"state_dir={tmp}", f"api.profile={profile}", *BASE_SETTINGS,
                          *found, *settings])
        app = make_app(cfg, ros=robot_lifecycle(nodes, bridge, pool, caller, actions))
        async with TestClient(TestServer(app)) as client:
            await scenario(Gw(client, app[STATE], profile, bridge, pool, caller, actions,
                              nodes))

    asyncio.run(go())
