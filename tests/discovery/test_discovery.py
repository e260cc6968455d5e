"""Runtime-only discovery as pure logic."""

from __future__ import annotations

from gateway.discovery.runtime import HostInfo, NodeRef, app_ids, build, function_id
from gateway.model.ids import qualify, sanitize, split_qualified

HOST = HostInfo("robot-7.local", "Linux", "x86_64", "6.1")


def test_sanitize_and_qualify() -> None:
    assert sanitize("robot-7.local") == "robot-7_local"
    assert sanitize("/powertrain/engine/x") == "powertrain_engine_x"
    assert sanitize("///") == "unnamed"
    assert qualify("app1", "/t") == "app1:/t"
    assert split_qualified("app1:/a:b") == ("app1", "/a:b")
    assert split_qualified("/plain") == (None, "/plain")


def test_function_per_first_namespace_segment() -> None:
    assert function_id("/powertrain/engine") == "powertrain"
    assert function_id("/") == "root"
    assert function_id("/body/door/front_left") == "body"


def test_build_runtime_entities() -> None:
    nodes = [NodeRef("temp_sensor", "/powertrain/engine"), NodeRef("lidar", "/perception"),
             NodeRef("lonely", "/")]
    es = build(nodes, HOST, generation=3)
    assert es.generation == 3 and es.areas == {}
    assert set(es.apps) == {"temp_sensor", "lidar", "lonely"}
    (comp,) = es.components.values()
    assert comp.id == "robot-7_local" and comp.name == "robot-7.local"
    assert sorted(comp.hosts) == ["lidar", "lonely", "temp_sensor"]
    assert comp.identity["model"] == "Linux x86_64"
    assert comp.identity["_provenance"]["model"] == "system"
    assert set(es.functions) == {"powertrain", "perception", "root"}
    assert es.functions["root"].hosts == ["lonely"]
    assert es.apps["temp_sensor"].component == comp.id
    assert [a.id for a in es.member_apps(es.functions["powertrain"])] == ["temp_sensor"]
    assert len(es.member_apps(comp)) == 3


def test_shared_node_names_take_the_namespace_prefix() -> None:
    nodes = [NodeRef("driver", "/left"), NodeRef("driver", "/right"), NodeRef("solo", "/a")]
    assert app_ids(nodes) == {"/left/driver": "left_driver", "/right/driver": "right_driver",
                              "/a/solo": "solo"}


def test_ids_that_sanitize_alike_stay_distinct() -> None:
    nodes = [NodeRef("a", "/x_y"), NodeRef("a", "/x/y")]
    got = app_ids(nodes)
    assert len(set(got.values())) == 2
