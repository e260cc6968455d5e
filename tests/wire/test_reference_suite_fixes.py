"""What the reference implementation's own tests still wanted (issue 44), in both profiles:
medkit data ids in resource URIs, the missing-type wording, /docs operation ids, tags and
XMedkit schemas, "Execution not found", cyclic payload `items`, the demo's lifecycle name.

An in-process gateway (aiohttp test client) over a stand-in graph: no ROS."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import make_app
from gateway.demo.nodes import FACTORIES
from gateway.demo.robot import NAMESPACES, NODES, demo_nodes, full_name
from gateway.http.state import STATE
from gateway.model.entities import Entity, EntitySet
from gateway.model.resource_uris import UriError, parse_resource
from gateway.push.keys import PUSH_DELIVERY
from gateway.push.rules import subscription_create, trigger_create
from gateway.push.wire import payload_items
from gateway.settings.config import load
from gateway.wire.docs import camel_case
from tests.wire_bundle import make_wire

PROFILES = ("spec", "medkit")
XV = {"spec": "x-vendor", "medkit": "x-medkit"}
NODE = "/chassis/brakes/actuator"
COMMAND = "/chassis/brakes/command"
SLASHED = f"/api/v1/apps/actuator/data/{COMMAND}"  # the data id keeps its leading '/'


class _Graph:
    """The stand-in ROS graph: the actuator subscribes to a Float32 command, serves an
    action; nothing else is on it."""

    topics: dict[str, Any] = {}

    def node(self, fqn: str) -> Any:
        if fqn != NODE:
            return None
        return SimpleNamespace(publishers=[], subscribers=[(COMMAND, "std_msgs/msg/Float32")],
                               user_services=list,
                               actions=[(f"{NODE}/brake_test", "test_msgs/action/Fibonacci")])


class _Cache:
    def __init__(self) -> None:
        es = EntitySet()
        es.components["host"] = Entity("components", "host", "host", hosts=["actuator"])
        es.apps["actuator"] = Entity("apps", "actuator", "actuator", node_fqn=NODE,
                                     component="host")
        self.entities, self.graph, self.generation = es, _Graph(), 1
        self.collisions: list[Any] = []

    def body(self, key: Any, build: Callable[[], Any]) -> Any:
        return build()

    def cached(self, key: Any) -> Any:
        return None

    def stats(self) -> dict[str, Any]:
        return {}


class _Pool:
    listener = None

    def __init__(self) -> None:
        self.published: list[tuple[str, Any]] = []

    def stats(self, events: Any) -> dict[str, Any]:
        return {}

    def peek(self, topic: str, type_name: str) -> None:
        return None

    async def publish(self, topic: str, type_name: str, msg: Any) -> int:
        self.published.append((topic, msg))
        return 1


def _app(tmp: Path, profile: str) -> Any:
    app = make_app(load(None, [f"state_dir={tmp}", f"api.profile={profile}"]))
    app.cleanup_ctx.clear()  # no ROS: what the routes read is given below
    state = app[STATE]
    state.cache, state.pool = _Cache(), _Pool()
    ready = asyncio.Event()
    ready.set()
    state.poller = SimpleNamespace(events=0, ready=ready)
    state.bridge = SimpleNamespace(health=lambda: {"worker_alive": True})
    state.actions = SimpleNamespace(get=lambda owner, path, exec_id: None)  # tracks no goal
    return app


def run(tmp: Path, profile: str, scenario: Callable[[TestClient, Any], Awaitable[None]]
        ) -> None:
    """Run `scenario(client, state)` against an in-process gateway with push delivery."""
    async def go() -> None:
        app = _app(tmp, profile)
        state = app[STATE]
        async with TestClient(TestServer(app)) as client:
            engine = app[PUSH_DELIVERY].engine  # no ROS side: the engine alone
            await engine.start()
            try:
                await scenario(client, state)
            finally:
                engine.end_streams()
                await engine.hub.close()
                await engine.stop()

    asyncio.run(go())


# --- resource URIs: `//` after the collection is the data id's leading '/' --------------------


def test_a_data_id_with_its_leading_slash_parses_like_the_topic_path() -> None:
    ref = parse_resource(SLASHED)
    assert (ref.collection, ref.path) == ("data", COMMAND)
    assert ref.uri == SLASHED  # echoed as written
    plain = parse_resource(f"/api/v1/apps/actuator/data{COMMAND}")
    assert plain.path == ref.path and plain.uri == f"/api/v1/apps/actuator/data{COMMAND}"
    for bad in ("/api/v1/apps/a/data//", "/api/v1/apps/a/data///x", "/api/v1/apps/a/data/x//y",
                "/api/v1/apps/a/data/", "/api/v1/apps/a//data/x"):
        with pytest.raises(UriError):
            parse_resource(bad)
    assert subscription_create({"resource": SLASHED, "interval": "fast"}, "apps", "actuator",
                               3600, {}).ref.path == COMMAND
    assert trigger_create({"resource": SLASHED, "trigger_condition": {
        "condition_type": "OnChange"}}, "apps", "actuator").ref.path == COMMAND


@pytest.mark.parametrize("profile", PROFILES)
def test_subscriptions_and_triggers_take_a_medkit_data_id(tmp_path: Path, profile: str) -> None:
    async def scenario(client: TestClient, state: Any) -> None:
        for collection, extra in (("cyclic-subscriptions", {"interval": "fast", "duration": 5}),
                                  ("triggers", {"trigger_condition": {
                                      "condition_type": "OnChange"}})):
            for kind, eid in (("apps", "actuator"), ("components", "host")):
                resource = f"/api/v1/{kind}/{eid}/data/{COMMAND}"
                resp = await client.post(f"/api/v1/{kind}/{eid}/{collection}",
                                         json={"resource": resource, **extra})
                body = await resp.json()
                assert resp.status == 201, body
                assert body["observed_resource"] == resource
            resp = await client.post(f"/api/v1/apps/actuator/{collection}", json={
                "resource": "/api/v1/apps/actuator/data/a//b", **extra})
            assert resp.status == 400
            assert "empty path segment" in (await resp.json())["message"]

    run(tmp_path, profile, scenario)


# --- wording ------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_an_envelope_without_type_is_refused_naming_type(tmp_path: Path, profile: str) -> None:
    async def scenario(client: TestClient, state: Any) -> None:
        url = f"/api/v1/apps/actuator/data{COMMAND}"
        resp = await client.put(url, json={"data": {"data": 50.0}})  # `type` left out
        body = await resp.json()
        assert resp.status == 400 and body["error_code"] == "invalid-request", body
        assert "type: missing required field" in body["message"]
        assert "expected float32, got object" in body["message"]
        assert body["parameters"]["fields"] == [
            {"field": "data", "message": "expected float32, got object"}]
        ok = await client.put(url, json={"data": 50.0})  # the bare message: still published
        assert ok.status == 200, await ok.text()
        ok = await client.put(url, json={"type": "std_msgs/msg/Float32", "data": {"data": 1.0}})
        assert ok.status == 200, await ok.text()
        assert len(state.pool.published) == 2
        # a topic nobody has: 404 (spec), or the reference's 400 naming `type` (medkit)
        resp = await client.put("/api/v1/apps/actuator/data/nobody/here",
                                json={"data": {"data": 1.0}})
        body = await resp.json()
        if profile == "spec":
            assert resp.status == 404 and body["error_code"] == "resource-not-found", body
        else:
            assert resp.status == 400 and body["error_code"] == "invalid-request", body
            assert body["message"].startswith("type: missing required field")
            assert body["parameters"]["fields"] == [
                {"field": "type", "message": "missing required field"}]
            assert body["parameters"]["topic"] == "/nobody/here"

    run(tmp_path, profile, scenario)


@pytest.mark.parametrize("profile", PROFILES)
def test_an_unknown_execution_says_execution(tmp_path: Path, profile: str) -> None:
    async def scenario(client: TestClient, state: Any) -> None:
        base = "/api/v1/apps/actuator/operations"
        for op in ("brake_test", "no_such_operation"):
            for method in ("GET", "PUT", "DELETE"):
                resp = await client.request(method, f"{base}/{op}/executions/nope",
                                            json={"capability": "stop"})
                body = await resp.json()
                assert resp.status == 404, body
                if profile == "medkit":
                    assert (body["error_code"], body["message"]) == (
                        "resource-not-found", "Execution not found"), body
                    assert body["parameters"]["execution_id"] == "nope"
                elif op == "brake_test":
                    assert body["message"].startswith("Execution 'nope' not found"), body
                else:  # the spec profile names the missing operation, as before
                    assert body["message"].startswith("Operation 'no_such_operation'"), body
        # the operation's own routes still answer operation-not-found (medkit)
        resp = await client.get(f"{base}/no_such_operation")
        body = await resp.json()
        assert resp.status == 404
        assert body["error_code"] == ("operation-not-found" if profile == "medkit"
                                      else "resource-not-found")

    run(tmp_path, profile, scenario)


# --- /docs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_docs_operation_ids_tags_and_vendor_schemas(tmp_path: Path, profile: str) -> None:
    async def scenario(client: TestClient, state: Any) -> None:
        doc = await (await client.get("/api/v1/docs")).json()
        ops = [op for path_ops in doc["paths"].values() for op in path_ops.values()]
        ids = [op["operationId"] for op in ops]
        assert len(ids) == len(set(ids))  # still unique
        status = doc["paths"]["/apps/{app_id}/status"]["get"]["operationId"]
        schemas = doc["components"]["schemas"]
        xmedkit = sorted(name for name in schemas if name.startswith("XMedkit"))
        if profile == "medkit":
            assert status == "getAppStatus"
            assert all("_" not in i for i in ids), [i for i in ids if "_" in i]
            assert {"XMedkitCollection", "XMedkitEntity", "XMedkitRos2"} <= set(xmedkit)
            assert schemas["ListEnvelope"]["properties"]["x-medkit"] == {
                "$ref": "#/components/schemas/XMedkitCollection"}
            assert schemas["EntitySummary"]["properties"]["x-medkit"] == {
                "$ref": "#/components/schemas/XMedkitEntity"}
        else:
            assert status == "get_app_status" and xmedkit == []
            assert "x-vendor" not in schemas["ListEnvelope"]["properties"]
        used = {t for op in ops for t in op.get("tags", ())}
        names = [t["name"] for t in doc["tags"]]
        assert set(names) == used and len(names) == len(used)
        assert all(t.get("description") for t in doc["tags"])
        refs = {v for v in _refs(doc)}
        assert refs <= {f"#/components/schemas/{n}" for n in schemas} | {
            f"#/components/responses/{n}" for n in doc["components"].get("responses", {})}
        # a scoped document lists the tags of its own paths
        scoped = await (await client.get("/api/v1/apps/actuator/docs")).json()
        scoped_used = {t for path_ops in scoped["paths"].values() for op in path_ops.values()
                       for t in op.get("tags", ())}
        assert {t["name"] for t in scoped["tags"]} == scoped_used == {"apps"}

    run(tmp_path, profile, scenario)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return out + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_the_spec_document_is_unchanged_by_a_medkit_one(tmp_path: Path) -> None:
    """The medkit finishing works on a copy: the shared schema objects stay the spec's."""
    docs: dict[str, Any] = {}
    for profile in ("medkit", "spec"):
        async def scenario(client: TestClient, state: Any, p: str = profile) -> None:
            docs[p] = await (await client.get("/api/v1/docs")).json()

        run(tmp_path / profile, profile, scenario)
    assert "x-vendor" not in docs["spec"]["components"]["schemas"]["ListEnvelope"]["properties"]
    assert not any(k.startswith("XMedkit") for k in docs["spec"]["components"]["schemas"])
    assert camel_case("put_app_status_force_restart") == "putAppStatusForceRestart"
    assert camel_case("get_apps_by_app_id_x_medkit_graph") == "getAppsByAppIdXMedkitGraph"
    assert camel_case("get_") == "get"  # the root


# --- cyclic subscription payloads ------------------------------------------------------------------


async def _first_frame(client: TestClient, events: str) -> dict[str, Any]:
    async with client.get(events) as resp:
        assert resp.status == 200
        while True:
            line = await asyncio.wait_for(resp.content.readline(), 10)
            if line.startswith(b"data: "):
                return json.loads(line[6:])  # type: ignore[no-any-return]


@pytest.mark.parametrize("profile", PROFILES)
def test_a_whole_collection_tick_carries_items_in_medkit(tmp_path: Path, profile: str) -> None:
    async def scenario(client: TestClient, state: Any) -> None:
        async def provide(st: Any, entity: Entity) -> list[dict[str, Any]]:
            return [{"id": "plc-1", "value": 3}]

        client.app[PUSH_DELIVERY].collections["x-plc"] = provide
        resp = await client.post("/api/v1/apps/actuator/cyclic-subscriptions", json={
            "resource": "/api/v1/apps/actuator/x-plc", "interval": "fast", "duration": 5})
        assert resp.status == 201, await resp.text()
        frame = await _first_frame(client, (await resp.json())["event_source"])
        key = "items" if profile == "medkit" else "data"
        assert frame["payload"] == {"id": "x-plc", key: [{"id": "plc-1", "value": 3}]}
        assert set(frame) == {"timestamp", "payload"}

    run(tmp_path, profile, scenario)


def test_relayed_payloads_are_read_under_either_key() -> None:
    for profile in PROFILES:
        push = make_wire(profile, profile if profile == "medkit" else "vendor").push
        payload = push.collection_payload("faults", [{"fault_code": "F"}])
        assert payload_items(payload) == [{"fault_code": "F"}]
    assert payload_items({"id": "/t", "data": {"data": 1}}) is None  # a topic's message
    assert payload_items(None) is None


# --- the demo robot ------------------------------------------------------------------------------


def test_the_medkit_demo_runs_the_reference_lifecycle_name() -> None:
    spec, medkit = demo_nodes("spec"), demo_nodes("medkit")
    assert spec == list(NODES) and "managed_lifecycle" in spec
    assert "managed_lifecycle_active" in medkit and "managed_lifecycle" not in medkit
    assert len(medkit) == len(spec)
    for name in medkit:  # each one can be started
        assert name in FACTORIES and name in NAMESPACES
    assert full_name("managed_lifecycle_active") == "/managed_lifecycle_active"
