"""Server resources in process (the server_info handlers): root, version-info, health, the
OpenAPI document and its scoped projections, and the 501 answers of unbuilt routes."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import BRAKE_TEST, CALIBRATE, PRESSURE, FakeNode

API = "/api/v1"


def test_root_and_version_info(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, root = await gw.json("GET", f"{API}/")
        assert status == 200
        assert root["name"] and root["version"] and root["api_base"] == API
        assert "GET /api/v1/apps/{app_id}/data/{data_id}" in root["endpoints"]
        assert all(e.split(" ", 1)[1].startswith(API) for e in root["endpoints"])
        caps = root["capabilities"]
        assert caps["discovery"] is caps["data_access"] is caps["vendor_extensions"] is True
        assert caps["aggregation"] is caps["tls"] is False
        assert "auth" not in root and "tls" not in root
        status, body = await gw.json("GET", f"{API}/version-info")
        assert status == 200
        (info,) = body["items"]
        assert info["base_uri"] == API and info["version"] == "1.0.0"
        assert info["vendor_info"]["version"] == root["version"]
        assert info["vendor_info"]["name"]
        assert "ros2" in info[gw.xv]
        # the second read comes from the fast path: the same answer
        status, again = await gw.json("GET", f"{API}/version-info")
        assert (status, again) == (200, body)

    gateway(scenario)


def test_root_announces_auth(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, root = await gw.json("GET", f"{API}/")
        assert status == 200 and root["capabilities"]["authentication"] is True
        assert root["auth"] == {"enabled": True, "algorithm": "HS256",
                                "require_auth_for": "write"}

    gateway(scenario, settings=("auth.enabled=true",
                                "auth.jwt_secret=0123456789abcdef0123456789abcdef0123"))


def test_health_blocks(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, health = await gw.json("GET", f"{API}/health")
        assert status == 200
        assert (health["status"], health["warning_schema_version"]) == ("healthy", 2)
        assert isinstance(health["timestamp"], int)
        assert health["discovery"]["strategy"] == "runtime"
        assert health["discovery"]["pipeline"]["id_collisions"] == []
        assert health[f"{gw.xv}-entity-cache"]["generation"] >= 1
        assert health[f"{gw.xv}-msgconv"]["implementation"] in ("compiled", "stock")
        assert health[f"{gw.xv}-subscription-executor"]["graph_events_received"] == 0
        assert "peers" not in health

    gateway(scenario)


def test_health_warns_of_two_nodes_with_one_name(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        gw.nodes.append(FakeNode("monitor", "/sensors/lidar"))
        gw.regraph()
        status, health = await gw.json("GET", f"{API}/health")
        assert status == 200
        (warning,) = health["warnings"]
        assert warning["code"] == "leaf_id_collision"
        assert sorted(warning["ros_node_fqns"]) == ["/chassis/brakes/monitor",
                                                    "/sensors/lidar/monitor"]
        assert health["discovery"]["pipeline"]["id_collisions"] == ["monitor"]

    gateway(scenario)


def test_openapi_documents(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, doc = await gw.json("GET", f"{API}/docs")
        assert status == 200
        assert doc["openapi"] == "3.1.0"
        op = doc["paths"]["/apps/{app_id}/data/{data_id}"]["get"]
        assert set(op["responses"]) >= {"200", "404", "416"}
        assert f"{gw.xv}-required-role" not in op  # auth off: no roles named
        status, scoped = await gw.json("GET", f"{API}/apps/actuator/data/docs")
        assert status == 200
        assert f"/apps/actuator/data/{quote(PRESSURE, safe='')}" in scoped["paths"]
        assert "/apps/actuator/data" in scoped["paths"]
        assert not any(p.startswith("/components") for p in scoped["paths"])
        status, whole = await gw.json("GET", f"{API}/apps/actuator/docs")
        assert status == 200 and "/apps/actuator" in whole["paths"]
        status, ops = await gw.json("GET", f"{API}/apps/actuator/operations/docs")
        assert status == 200
        for op_id in (CALIBRATE.rsplit("/", 1)[1], BRAKE_TEST.rsplit("/", 1)[1]):
            assert f"/apps/actuator/operations/{op_id}/executions" in ops["paths"]
        status, listing = await gw.json("GET", f"{API}/apps/docs")
        assert status == 200 and "/apps" in listing["paths"]
        for refused in ("locks", "status", "scripts"):
            body = await gw.error("GET", f"{API}/apps/actuator/{refused}/docs", 404)
            assert body["error_code"] == "resource-not-found"
        body = await gw.error("GET", f"{API}/apps/ghost/docs", 404)
        assert body["parameters"]["entity_id"] == "ghost"
        await gw.error("GET", f"{API}/apps/actuator/nonsense/docs", 404)

    gateway(scenario)


def test_openapi_names_the_roles_with_auth_on(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, doc = await gw.json("GET", f"{API}/docs")
        assert status == 200
        put = doc["paths"]["/apps/{app_id}/configurations/{param_name}"]["put"]
        assert put[f"{gw.xv}-required-role"] == "configurator"

    gateway(scenario, settings=("auth.enabled=true", "auth.require_auth_for=write",
                                "auth.jwt_secret=0123456789abcdef0123456789abcdef0123"))


def test_docs_can_be_off(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for path in (f"{API}/docs", f"{API}/apps/actuator/docs"):
            body = await gw.error("GET", path, 501)
            assert body["error_code"] == "not-implemented"
            assert body["message"] == "Capability description is disabled"
            assert body["parameters"] == {"feature": "docs",
                                          "details": "Set docs.enabled to true"}

    gateway(scenario, settings=("docs.enabled=false",))


def test_unbuilt_and_unsupported_collections_answer_501(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for path, feature in ((f"{API}/apps/actuator/data-categories", "data-categories"),
                              (f"{API}/functions/chassis/data-groups", "data-groups"),
                              (f"{API}/apps/actuator/scripts", "scripts")):  # no scripts_dir
            body = await gw.error("GET", path, 501)
            assert body["error_code"] == "not-implemented"
            assert body["parameters"]["feature"] == feature
        body = await gw.error("GET", f"{API}/apps/actuator/data-categories", 501)
        assert body["message"] == "Data categories are not implemented for ROS 2"
        # an unbuilt route is still in the document and the route table, not in the root
        status, root = await gw.json("GET", f"{API}/")
        assert "GET /api/v1/apps/{app_id}/data-categories" not in root["endpoints"]
        status, doc = await gw.json("GET", f"{API}/docs")
        assert "/apps/{app_id}/data-categories" in doc["paths"]

    gateway(scenario)


# --- wire profiles (medkit-wire.md rows) -------------------------------------------------------


def test_root_version_and_health_wire(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, root = await gw.json("GET", f"{API}/")
        assert {"locking", "scripts", "vendor_extensions", "authentication"} <= set(
            root["capabilities"])
        status, body = await gw.json("GET", f"{API}/version-info")
        assert set(body["items"][0]["vendor_info"]) == {"version", "name"}
        status, health = await gw.json("GET", f"{API}/health")
        assert health["status"] == "healthy" and f"{gw.xv}-data-provider" in health

    gateway(scenario)


def test_log_configuration_schema_in_docs(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, doc = await gw.json("GET", f"{API}/docs")
        op = doc["paths"]["/apps/{app_id}/logs/configuration"]["get"]
        ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        schema = doc["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert set(schema["properties"]) == {"severity_filter", "max_entries"}

    gateway(scenario)


OFF = ("locking.enabled=false", "triggers.enabled=false", "fault_triggers.enabled=false",
       "docs.enabled=false")


def test_absent_features_answer_501_not_implemented(gateway: Runner) -> None:
    app = f"{API}/apps/actuator"

    async def scenario(gw: Gw) -> None:
        for path, feature, message in (
            (f"{app}/locks", "locks", "Locking is not enabled on this gateway"),
            (f"{app}/scripts", "scripts", "Scripts backend not configured"),
            (f"{API}/updates", "updates", "Software updates backend not configured"),
            (f"{app}/triggers", "triggers", "Triggers not available"),
            (f"{app}/fault-triggers", "fault-triggers", "Fault triggers not available"),
            (f"{API}/docs", "docs", "Capability description is disabled"),
        ):
            body = await gw.error("GET", path, 501)
            assert body["error_code"] == "not-implemented", path
            assert body["message"] == message
            assert body["parameters"]["feature"] == feature and body["parameters"]["details"]

    gateway(scenario, settings=OFF)


def test_root_capabilities_follow_the_features(gateway: Runner, tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    on = (f"scripts.scripts_dir={scripts}", "scripts.allow_anonymous=true",
          "scripts.allow_root=true", "plugins=[update_provider]",
          f"plugins.update_provider.install_root={tmp_path / 'installed'}")
    seen: dict[str, dict[str, bool]] = {}

    async def scenario(gw: Gw) -> None:
        status, root = await gw.json("GET", f"{API}/")
        seen["off" if "on" in seen else "on"] = root["capabilities"]

    gateway(scenario, settings=on)
    gateway(scenario, settings=OFF)
    for key in ("locking", "scripts", "triggers", "updates"):
        assert seen["on"][key] is True and seen["off"][key] is False, key
    assert "vendor_extensions" in seen["on"]
