"""A Cyclone DDS robot (rmw_cyclonedds_cpp's wire) from the Fast DDS gateway: every participant
is listed, read, written, called and raises faults, named or not, in both gid layouts.

The gateway starts from a Cyclone user's shell (`RMW_IMPLEMENTATION=rmw_cyclonedds_cpp`): the
variable is set aside and named in the log. A primary on another domain shows the robot's
participants through federation.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import free_port
from tests.cyclone.conftest import CycloneRobot
from tests.domains import next_domain
from tests.harness import Gateway, enc

pytestmark = pytest.mark.integration

NAMED = ("cy_robot", "cy_humble")
NAMES = (*NAMED, "cy_bare")


@pytest.fixture(scope="module")
def gw(cyclone_domain: int, cyclone_robots: dict[str, CycloneRobot],
       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gateway")
    settings = ["faults.diagnostics_bridge.enabled=true", f"state_dir={tmp / 'state'}"]
    g = Gateway(free_port(), cyclone_domain, settings, tmp / "gateway.log",
                env={"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"})
    with g:
        g.wait_for("/apps", lambda b: len(apps_of(b)) == 3, timeout=60)
        yield g


def apps_of(body: dict[str, Any]) -> dict[str, str]:
    """Robot name -> app id: the named nodes, and the nameless participant by its topics."""
    ids = {i["id"] for i in body["items"]}
    out = {n: n for n in NAMED if n in ids}
    bare = [i for i in ids if i.startswith("dds_cyclone_")]
    if len(bare) == 1:
        out["cy_bare"] = bare[0]
    return out


@pytest.fixture(scope="module")
def apps(gw: Gateway) -> dict[str, str]:
    return apps_of(gw.get("/apps").json())


def test_every_participant_has_an_entity(gw: Gateway, apps: dict[str, str]) -> None:
    for name, app in apps.items():
        body = gw.wait_for(f"/apps/{app}/data", lambda b, n=name: {
            f"/{n}/temperature", f"/{n}/status", f"/{n}/command",
            f"/{n}/command_echo"} <= {i["id"] for i in b["items"]}, timeout=30)
        topics = {i["id"] for i in body["items"]}
        assert not any(t.startswith(f"/{o}/") for o in NAMES if o != name for t in topics)
    health = gw.get("/health").json()
    info = health["x-vendor-ros-types"]["discovery_info"]
    assert info["humble_participants"] == 1  # cy_humble, named from its 24-byte gids
    assert info["nameless_participants"]["participants"] == 1  # cy_bare
    readiness = health["x-vendor-readiness"]
    assert not readiness.get("participants_unseen"), readiness


def test_reads(gw: Gateway, apps: dict[str, str]) -> None:
    for name, app in apps.items():
        body = gw.wait_for(f"/apps/{app}/data/{enc(f'/{name}/temperature')}",
                           lambda b: b.get("data") is not None, timeout=30)
        assert body["data"]["header"]["frame_id"] == name
        assert 20.0 <= body["data"]["temperature"] < 30.0
        status = gw.wait_for(f"/apps/{app}/data/{enc(f'/{name}/status')}",
                             lambda b: b.get("data") is not None, timeout=30)
        assert status["data"] == {"data": "cyclone robot up"}  # transient local


def test_writes_reach_the_robot(gw: Gateway, apps: dict[str, str]) -> None:
    for name, app in apps.items():
        word = f"go {name} {time.monotonic_ns()}"
        resp = gw.request("PUT", f"/apps/{app}/data/{enc(f'/{name}/command')}",
                          {"type": "std_msgs/msg/String", "data": {"data": word}})
        assert resp.status == 200, resp
        gw.wait_for(f"/apps/{app}/data/{enc(f'/{name}/command_echo')}",
                    lambda b, w=word: (b.get("data") or {}).get("data") == f"echo: {w}",
                    timeout=30)


def test_service_calls_speak_rmw_cyclonedds(gw: Gateway, apps: dict[str, str]) -> None:
    for name, app in apps.items():
        ops = gw.wait_for(f"/apps/{app}/operations",
                          lambda b: "trigger" in {i["id"] for i in b["items"]}, timeout=30)
        assert any(i["id"] == "trigger" and i["x-vendor"]["ros2_service"] == f"/{name}/trigger"
                   for i in ops["items"])
        answers = []
        for _ in range(3):
            resp = gw.request("POST", f"/apps/{app}/operations/trigger/executions",
                              {"parameters": {}})
            assert resp.status == 200, resp
            answers.append(resp.json()["parameters"])
        assert all(a["success"] for a in answers)
        counts = [int(a["message"].rsplit(" ", 1)[1]) for a in answers]
        assert counts == sorted(counts) and len(set(counts)) == 3  # each call answered once
    assert gw.get("/health").json()["x-vendor-service-calls"]["cyclone_clients"] == 3


def test_faults_name_their_participant(gw: Gateway, apps: dict[str, str]) -> None:
    codes = {f"{n.upper()}_MOTOR": n for n in NAMES}
    body = gw.wait_for("/faults", lambda b: set(codes) <= {f["fault_code"] for f in b["items"]},
                       timeout=30)
    for fault in body["items"]:
        name = codes.get(fault["fault_code"])
        if name is not None:
            assert fault["source"] == f"/{apps[name]}", fault
            assert fault["severity"] == "ERROR"


def test_rosout_logs_of_named_nodes(gw: Gateway, apps: dict[str, str]) -> None:
    for name in NAMED:
        body = gw.wait_for(f"/apps/{name}/logs", lambda b, n=name: any(
            e["message"].startswith(f"{n} alive") for e in b["items"]), timeout=30)
        line = next(e for e in body["items"] if e["message"].startswith(f"{name} alive"))
        assert line["severity"] == "info"


def test_the_shells_rmw_is_set_aside_and_named(gw: Gateway) -> None:
    assert gw.log_path is not None
    log = gw.log_path.read_text(errors="replace")
    assert "RMW_IMPLEMENTATION=rmw_cyclonedds_cpp set aside" in log
    assert "DDS: profile" in log or "DDS: types matched by name" in log


def test_a_primary_shows_the_cyclone_robot(gw: Gateway, apps: dict[str, str],
                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("primary")
    settings = [f"state_dir={tmp / 'state'}", "aggregation.enabled=true",
                f"aggregation.peer_urls=[http://127.0.0.1:{gw.port}]",
                "aggregation.peer_names=[cyclone]", "aggregation.health_interval_ms=200",
                "aggregation.refresh_interval_ms=200"]
    with Gateway(free_port(), next_domain(), settings, tmp / "primary.log") as primary:
        primary.wait_for("/apps", lambda b: set(apps.values()) <= {i["id"] for i in b["items"]},
                         timeout=60)
        app = apps["cy_bare"]
        body = primary.wait_for(f"/apps/{app}/data/{enc('/cy_bare/temperature')}",
                                lambda b: b.get("data") is not None, timeout=30)
        assert body["data"]["header"]["frame_id"] == "cy_bare"
        resp = primary.request("POST", f"/apps/{app}/operations/trigger/executions",
                               {"parameters": {}})
        assert resp.status == 200 and resp.json()["parameters"]["success"], resp
