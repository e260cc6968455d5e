"""Discovery and server routes in process (entities, server, manifest and unbuilt
handlers): entity lists and details over the fake robot, relations, the root, version-info,
health, and the 404/400/405 answers of both wire profiles."""

from __future__ import annotations

from pathlib import Path

from yarl import URL

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import ACTIVE, ACTUATOR, HOST, FakeNode, default_nodes

API = "/api/v1"


def test_entity_lists_come_from_the_graph(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/apps")
        assert status == 200
        assert [i["id"] for i in body["items"]] == ["actuator", "monitor", "scanner"]
        assert body[gw.xv]["total_count"] == 3
        first = body["items"][0]
        assert first["href"] == f"{API}/apps/actuator" and first["type"] == "app"
        assert first[gw.xv]["is_online"] is True
        assert first[gw.xv]["component_id"] == HOST
        status, body = await gw.json("GET", f"{API}/components")
        assert status == 200 and [i["id"] for i in body["items"]] == [HOST]
        status, body = await gw.json("GET", f"{API}/functions")
        assert status == 200 and [i["id"] for i in body["items"]] == ["chassis", "sensors"]
        status, body = await gw.json("GET", f"{API}/areas")
        assert (status, body["items"], body[gw.xv]["total_count"]) == (200, [], 0)

    gateway(scenario)


def test_app_detail_lists_capabilities_and_links(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/apps/actuator")
        assert status == 200
        assert (body["id"], body["name"], body["type"]) == ("actuator", "actuator", "app")
        assert body[gw.xv]["ros2"] == {"node": ACTUATOR, "namespace": "/chassis/brakes"}
        assert body[gw.xv]["contributors"] == ["local"]
        names = [c["name"] for c in body["capabilities"]]
        for word in ("data", "operations", "configurations", "faults", "logs", "locks",
                     "bulk-data", "triggers", "cyclic-subscriptions", "status"):
            assert word in names, names
        assert "scripts" not in names  # no scripts_dir: the feature is off
        caps = {c["name"]: c["href"] for c in body["capabilities"]}
        assert caps["faults"] == f"{API}/apps/actuator/faults"
        assert body["_links"]["self"] == f"{API}/apps/actuator"
        located = body["_links"]["is-located-on"]
        if gw.profile == "medkit":  # the reference links the component itself
            assert located == f"{API}/components/{HOST}"
        else:
            assert located == f"{API}/apps/actuator/is-located-on"

    gateway(scenario)


def test_component_and_function_detail(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/components/{HOST}")
        assert status == 200 and body["type"] == "component"
        assert body[gw.xv]["identity"]["networkEndpoint"] == HOST
        status, body = await gw.json("GET", f"{API}/functions/chassis")
        assert status == 200 and body["id"] == "chassis" and body["type"] == "function"

    gateway(scenario)


def test_relations(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/apps/actuator/is-located-on")
        assert status == 200 and [i["id"] for i in body["items"]] == [HOST]
        assert body[gw.xv] == {"total_count": 1, "entity_id": "actuator"}
        assert body["_links"] == {"self": f"{API}/apps/actuator/is-located-on",
                                  "app": f"{API}/apps/actuator"}
        status, body = await gw.json("GET", f"{API}/apps/actuator/depends-on")
        assert status == 200 and body["items"] == []
        status, body = await gw.json("GET", f"{API}/functions/chassis/hosts")
        assert [i["id"] for i in body["items"]] == ["actuator", "monitor"]
        status, body = await gw.json("GET", f"{API}/components/{HOST}/hosts")
        assert [i["id"] for i in body["items"]] == ["actuator", "monitor", "scanner"]
        status, body = await gw.json("GET", f"{API}/components/{HOST}/subcomponents")
        assert status == 200 and body["items"] == []

    gateway(scenario)


def test_unknown_entity(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"{API}/apps/nope", 404)
        assert body["parameters"]["entity_id"] == "nope"
        assert body["parameters"]["app_id"] == "nope"
        if gw.profile == "medkit":
            assert (body["error_code"], body["message"]) == ("entity-not-found",
                                                             "Entity not found")
        else:
            assert (body["error_code"], body["message"]) == ("resource-not-found",
                                                             "App not found: 'nope'")
        # a relationship route names the app (spec rule 5)
        body = await gw.error("GET", f"{API}/apps/nope/is-located-on", 404)
        assert body["parameters"]["app_id"] == "nope"
        assert body["error_code"] == ("entity-not-found" if gw.profile == "medkit"
                                      else "resource-not-found")
        if gw.profile == "spec":
            assert body["message"] == "App not found"
        # every collection under an unknown entity answers the same 404
        for tail in ("data", "operations", "configurations", "faults", "logs"):
            body = await gw.error("GET", f"{API}/apps/nope/{tail}", 404)
            assert body["parameters"]["entity_id"] == "nope"

    gateway(scenario)


def test_an_id_of_another_type(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        if gw.profile == "medkit":  # the reference names the type mismatch
            body = await gw.error("GET", f"{API}/components/actuator", 400)
            assert body["error_code"] == "invalid-parameter"
            assert body["message"] == "Invalid entity type for route: expected Component, got App"
            assert body["parameters"] == {"entity_id": "actuator", "expected_type": "Component",
                                          "actual_type": "App"}
        else:
            body = await gw.error("GET", f"{API}/components/actuator", 404)
            assert body["error_code"] == "resource-not-found"
            assert body["message"] == "Component not found: 'actuator'"

    gateway(scenario)


def test_unknown_path_and_method(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"{API}/nonsense", 404)
        assert body["error_code"] == "resource-not-found"
        assert body["message"] == "No resource at /api/v1/nonsense"
        for method, path in (("POST", f"{API}/apps"), ("DELETE", f"{API}/apps"),
                             ("PATCH", f"{API}/apps/actuator")):
            if gw.profile == "spec":
                body = await gw.error(method, path, 405)
                assert body["message"] == (f"Method {method} is not allowed on {path}; "
                                           "allowed: GET, HEAD")
                assert body["parameters"] == {"status": 405}
            else:  # the reference has no 405: an unrouted method is a 404
                body = await gw.error(method, path, 404)
                assert body["message"] == (f"No resource at {path} for method {method} "
                                           "(served methods: GET, HEAD)")
            assert body["error_code"] == "resource-not-found"

    gateway(scenario)


def test_root_lists_endpoints_and_capabilities(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/")
        assert status == 200 and body["api_base"] == API
        assert "GET /api/v1/apps/{app_id}/faults" in body["endpoints"]
        caps = body["capabilities"]
        assert caps["faults"] is caps["locking"] is caps["configurations"] is True
        assert caps["scripts"] is caps["updates"] is caps["authentication"] is False
        status, body = await gw.json("GET", f"{API}/version-info")
        assert status == 200
        (item,) = body["items"]
        assert item["base_uri"] == API and item["version"] == "1.0.0"

    gateway(scenario)


def test_health_reports_the_services(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/health")
        assert status == 200
        assert (body["status"], body["ready"], body["warnings"]) == ("healthy", True, [])
        assert body["discovery"]["mode"] == "runtime_only"
        assert body["discovery"]["pipeline"]["total_entities"] == 6  # 3 apps, 1 comp., 2 fn.
        assert body[f"{gw.xv}-locks"] == {"held": 0}
        assert body[f"{gw.xv}-fault-manager"]["faults"] == 0
        assert body[f"{gw.xv}-subscription-executor"]["worker_alive"] is True

    gateway(scenario)


def test_manifest_status_without_a_manifest(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/manifest/status")
        assert status == 200
        assert body == {"active": False, "path": "", "mode": "runtime_only",
                        "validation": {"is_valid": True, "error_count": 0,
                                       "warning_count": 0}}

    gateway(scenario)


def test_a_node_leaving_the_graph_leaves_the_list(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/apps/scanner")
        assert status == 200
        gw.nodes[:] = [n for n in gw.nodes if n.name != "scanner"]
        gw.regraph()
        status, body = await gw.json("GET", f"{API}/apps")
        assert [i["id"] for i in body["items"]] == ["actuator", "monitor"]
        await gw.error("GET", f"{API}/apps/scanner", 404)
        status, body = await gw.json("GET", f"{API}/functions")
        assert [i["id"] for i in body["items"]] == ["chassis"]

    gateway(scenario)


def test_unbuilt_features_answer_501(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"{API}/apps/actuator/triggers", 501)
        assert body["error_code"] == "not-implemented"
        assert body["parameters"]["feature"] == "triggers"
        status, body = await gw.json("GET", f"{API}/apps/actuator")
        assert "triggers" not in [c["name"] for c in body["capabilities"]]
        status, body = await gw.json("GET", f"{API}/")
        assert body["capabilities"]["triggers"] is False

    gateway(scenario, settings=("triggers.enabled=false",))


def test_status_of_apps_and_components(gateway: Runner) -> None:
    nodes = default_nodes() + [FakeNode("pump", "/chassis", lifecycle=ACTIVE)]

    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/apps/actuator/status")
        assert status == 200
        assert (body["id"], body["status"]) == ("actuator", "ready")
        assert body[gw.xv]["is_online"] is True
        assert body[gw.xv]["ros2"] == {"node": ACTUATOR}
        assert "lifecycle" not in body[gw.xv] and "start" not in body
        status, body = await gw.json("GET", f"{API}/apps/pump/status")
        assert (status, body["status"]) == (200, "ready")
        assert body[gw.xv]["lifecycle"] == {"state": "active", "state_id": 3}
        status, body = await gw.json("GET", f"{API}/components/{HOST}/status")
        assert (status, body["id"], body["status"]) == (200, HOST, "ready")
        assert body[gw.xv] == {"apps_total": 4, "apps_online": 4}
        body = await gw.error("GET", f"{API}/apps/ghost/status", 404)
        assert body["parameters"]["entity_id"] == "ghost"
        # status is served for apps and components only
        if gw.profile == "medkit":  # the reference names the unsupported collection
            body = await gw.error("GET", f"{API}/functions/chassis/status", 400)
            assert body["error_code"] == "collection-not-supported"
            assert body["message"] == "Function entities do not support status collection"
        else:
            status, body = await gw.json("GET", f"{API}/functions/chassis/status")
            assert status in (404, 405), (status, body)
        # a plain node has no lifecycle to control
        for action in ("restart", "shutdown", "force-shutdown"):
            await gw.error("PUT", f"{API}/apps/actuator/status/{action}", 501, json={})

    gateway(scenario, nodes=nodes)


def test_more_relations_and_unknown_ids(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/apps/actuator/belongs-to")
        assert (status, body["items"], body[gw.xv]["total_count"]) == (200, [], 0)
        status, body = await gw.json("GET", f"{API}/components/{HOST}/depends-on")
        assert (status, body["items"]) == (200, [])
        status, body = await gw.json("GET", f"{API}/components/{HOST}")
        caps = {c["name"] for c in body["capabilities"]}
        assert {"data", "hosts", "depends-on", "subcomponents"} <= caps
        status, body = await gw.json("GET", f"{API}/apps/actuator")
        assert "belongs-to" in body["_links"]
        for path in (f"{API}/components/ghost/data", f"{API}/functions/ghost",
                     f"{API}/areas/ghost", f"{API}/functions/ghost/hosts",
                     f"{API}/components/ghost/subcomponents"):
            body = await gw.error("GET", path, 404)
            assert body["error_code"] == ("entity-not-found" if gw.profile == "medkit"
                                          else "resource-not-found"), path

    gateway(scenario)


def test_http_layer_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        # as sent: the client must not quote the '%' again
        body = await gw.error("GET", URL(f"{API}/apps/actuator/data/%ZZ", encoded=True), 400)
        assert body["error_code"] == "invalid-request"
        assert "percent-encoding" in body["message"]
        await gw.error("GET", URL(f"{API}/apps/actuator/data/%C3%28", encoded=True), 400)
        body = await gw.error("GET", f"{API}/health", 416, headers={"Range": "bytes=oops"})
        assert body["parameters"]["status"] == 416
        await gw.error("GET", f"{API}/apps", 416, headers={"Range": "lines=1-2"})
        status, _ = await gw.json("GET", f"{API}/apps", headers={"Range": "bytes=0-10"})
        assert status == 200

    gateway(scenario)


def test_manifest_status_and_health_without_linking(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/manifest/status")
        assert "entity_counts" not in body and "metadata" not in body
        status, body = await gw.json("GET", f"{API}/health")
        assert "linking" not in body["discovery"]

    gateway(scenario)


# --- wire profiles (medkit-wire.md rows) -------------------------------------------------------


def test_entity_items_node_and_source(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{API}/apps")
        xv = next(i for i in body["items"] if i["id"] == "actuator")[gw.xv]
        assert xv["ros2"]["node"] == ACTUATOR
        assert xv["source"] == "heuristic" and xv["component_id"]
        status, body = await gw.json("GET", f"{API}/components")
        assert body["items"][0][gw.xv]["source"] == "runtime"
        status, body = await gw.json("GET", f"{API}/functions")
        assert {f[gw.xv]["source"] for f in body["items"]} == {"runtime"}

    gateway(scenario)


def test_entity_detail_links_and_uris(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, detail = await gw.json("GET", f"{API}/apps/actuator")
        expected = {"spec": f"{API}/apps/actuator/is-located-on",
                    "medkit": f"{API}/components/{HOST}"}[gw.profile]
        assert detail["_links"]["is-located-on"] == detail["is-located-on"] == expected
        assert detail["_links"]["collection"] == f"{API}/apps"
        assert detail["data"] == f"{API}/apps/actuator/data"
        assert detail["configurations"] == f"{API}/apps/actuator/configurations"
        assert {"name": "faults", "href": f"{API}/apps/actuator/faults"} in \
            detail["capabilities"]
        status, body = await gw.json("GET", f"{API}/components/{HOST}/subcomponents")
        assert body["_links"]["parent"] == f"{API}/components/{HOST}"
        status, body = await gw.json("GET", f"{API}/components/{HOST}/hosts")
        assert body["_links"]["component"] == f"{API}/components/{HOST}"

    gateway(scenario)


def test_invalid_entity_id_is_400(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for path, bad in (("/apps/app;drop", "app;drop"), ("/apps/a.b/data", "a.b"),
                          ("/components/x%20y", "x y"), ("/functions/f$/hosts", "f$"),
                          ("/apps/a%3Bb/is-located-on", "a;b")):
            body = await gw.error("GET", URL(f"{API}{path}", encoded=True), 400)
            assert body["error_code"] == "invalid-parameter", path
            assert body["parameters"]["entity_id"] == bad, path
            assert "Only alphanumeric" in body["parameters"]["details"]

    gateway(scenario)


def test_unknown_route_and_collection_of_another_entity_type(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"{API}/apps/actuator/foo", 404)
        assert body["error_code"] == "resource-not-found"
        assert body["parameters"]["status"] == 404
        if gw.profile == "medkit":  # locks: components and apps only
            body = await gw.error("GET", f"{API}/functions/chassis/locks", 400)
            assert body["error_code"] == "collection-not-supported"
            assert body["parameters"] == {"entity_id": "chassis", "collection": "locks"}
            assert body["message"] == "Function entities do not support locks collection"
        else:
            body = await gw.error("GET", f"{API}/functions/chassis/locks", 404)
            assert body["error_code"] == "resource-not-found"
        body = await gw.error("GET", f"{API}/functions/chassis/no-such-collection", 404)
        assert body["error_code"] == "resource-not-found"

    gateway(scenario)


def test_collection_docs(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for kind in ("apps", "components", "areas", "functions"):
            status, body = await gw.json("GET", f"{API}/{kind}/docs")
            assert status == 200, (kind, body)
            paths = body["paths"]
            assert f"/{kind}" in paths and all(p.startswith(f"/{kind}") for p in paths)
            if kind == "apps":
                assert "/apps/{app_id}/data/{data_id}" in paths

    gateway(scenario)


def test_nested_discovery_unknown_id(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for path, kind in (("/areas/ghost/subareas", "area"), ("/areas/ghost/contains", "area"),
                           ("/components/ghost/subcomponents", "component"),
                           ("/functions/ghost/hosts", "function")):
            body = await gw.error("GET", f"{API}{path}", 404)
            if gw.profile == "medkit":
                assert body["error_code"] == "entity-not-found"
                assert body["message"] == f"{kind.capitalize()} not found"
            else:
                assert body["error_code"] == "resource-not-found"
            assert body["parameters"][f"{kind}_id"] == "ghost"

    gateway(scenario)


def test_detail_uris_follow_the_features(gateway: Runner, tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    on = (f"scripts.scripts_dir={scripts}", "scripts.allow_anonymous=true",
          "scripts.allow_root=true", "plugins=[graph_provider]")
    off = ("locking.enabled=false", "triggers.enabled=false")
    app = f"{API}/apps/actuator"

    async def served(gw: Gw) -> None:
        status, detail = await gw.json("GET", app)
        for word in ("locks", "scripts", "cyclic-subscriptions", "triggers", "status", "logs"):
            assert detail[word] == f"{app}/{word}", word
            assert {"name": word, "href": f"{app}/{word}"} in detail["capabilities"]
        status, func = await gw.json("GET", f"{API}/functions/chassis")
        graph = f"{gw.xv}-graph"
        assert func[graph] == f"{API}/functions/chassis/{graph}"
        # the graph plugin reads receive statistics the fake pool does not keep: none yet
        setattr(gw.pool, "topic_stats", lambda topic: None)  # noqa: B010
        status, body = await gw.json("GET", f"{API}/functions/chassis/{graph}")
        assert status == 200, body
        assert "hosts" in func

    async def absent(gw: Gw) -> None:
        status, detail = await gw.json("GET", app)
        names = {c["name"] for c in detail["capabilities"]}
        for word in ("locks", "scripts", "triggers"):  # only when served
            assert word not in detail and word not in names, word
        assert detail["cyclic-subscriptions"] == f"{app}/cyclic-subscriptions"

    gateway(served, settings=on)
    gateway(absent, settings=off)
