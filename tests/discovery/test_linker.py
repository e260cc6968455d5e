"""Hybrid linking, manifest_only, and the CSV inventory as pure logic."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.discovery import linker
from gateway.discovery.inventory import CsvError, merge_identity, parse_csv
from gateway.discovery.linker import GapFill, GraphNode
from gateway.discovery.manifest import Manifest, ManifestError, load

MANIFEST = """\
manifest_version: "1.0"
config: {unmanifested_nodes: %s}
areas:
  - id: powertrain
    subareas: [{id: engine}]
components:
  - id: ecu
    area: engine
  - id: board
    parent_component_id: ecu
apps:
  - id: sensor
    is_located_on: board
    ros_binding: {node_name: temp_sensor, namespace: /powertrain}
  - id: monitor
    is_located_on: ecu
    ros_binding: {node_name: temp_monitor}
  - id: any_monitor
    ros_binding: {node_name: temp_monitor, namespace: "*"}
  - id: by_topic
    is_located_on: ecu
    ros_binding: {topic_namespace: /lidar}
  - id: ghost
    is_located_on: ecu
    ros_binding: {node_name: ghost, namespace: /nowhere}
  - id: outside
    external: true
functions:
  - id: engine-fn
    hosted_by: [sensor, ecu]
"""
NODES = [
    GraphNode("temp_sensor", "/powertrain/engine"),
    GraphNode("temp_monitor", "/b"),
    GraphNode("temp_monitor", "/a"),
    GraphNode("lidar_driver", "/sensors", ("/lidar/scan",)),
    GraphNode("stray", "/misc"),
    GraphNode("sensor", "/other"),  # a runtime app id equal to a manifest app id
]


def manifest(tmp_path: Path, policy: str = "warn", extra: str = "") -> Manifest:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST % policy + extra)
    return load(str(path), strict=False)


def test_binding_matches_name_namespace_and_topics() -> None:
    assert linker.namespace_matches("/a/b", "/a")
    assert not linker.namespace_matches("/ab", "/a")
    assert linker.namespace_matches("/", "")
    assert not linker.namespace_matches("/a", "/")
    assert linker.namespace_matches("/anything", "*")
    node = GraphNode("n", "/x", ("/lidar/scan",))
    assert linker.matches({"node_name": "n", "namespace": "*"}, node)
    assert not linker.matches({"node_name": "m", "namespace": "*"}, node)
    assert linker.matches({"topic_namespace": "/lidar"}, node)
    assert not linker.matches({"topic_namespace": "/lid"}, node)


def test_hybrid_links_in_fqn_order_and_reports(tmp_path: Path) -> None:
    es, r = linker.hybrid(manifest(tmp_path), NODES, 7)
    assert es.generation == 7
    sensor = es.apps["sensor"]
    assert sensor.is_online and sensor.node_fqn == "/powertrain/engine/temp_sensor"
    # wildcard with several matches: the first FQN wins; the later app finds it taken
    assert es.apps["monitor"].bound_fqn == "/a/temp_monitor"
    assert es.apps["any_monitor"].bound_fqn == "/b/temp_monitor"
    assert es.apps["by_topic"].bound_fqn == "/sensors/lidar_driver"
    ghost = es.apps["ghost"]
    assert not ghost.is_online and ghost.node_fqn is None
    assert not es.apps["outside"].is_online
    assert r.linked_count == 4 and r.binding_conflicts == 0
    # orphans: stray kept as a heuristic app; the node named like a manifest app is suppressed
    assert r.orphans == ["/misc/stray", "/other/sensor"]
    assert es.apps["stray"].source == "heuristic" and es.apps["stray"].component is None
    assert es.apps["sensor"].source == "manifest"
    assert r.warnings == ["Unmanifested node '/misc/stray'", "Unmanifested node '/other/sensor'"]
    assert es.components["ecu"].hosts == ["monitor", "by_topic", "ghost"]
    assert es.functions["engine-fn"].hosts == ["sensor", "monitor", "by_topic", "ghost"]
    assert [a.id for a in es.member_apps(es.areas["powertrain"])] == [
        "monitor", "by_topic", "ghost", "sensor"]
    assert r.pipeline()["layers"] == ["manifest", "runtime"]
    assert r.pipeline()["total_entities"] == es.total()
    assert r.linking()["orphan_count"] == 2


def test_binding_conflict_is_counted_with_its_warning(tmp_path: Path) -> None:
    nodes = [GraphNode("temp_monitor", "/a")]
    es, r = linker.hybrid(manifest(tmp_path), nodes, 1)
    assert es.apps["monitor"].bound_fqn == "/a/temp_monitor"
    assert not es.apps["any_monitor"].is_online
    assert r.binding_conflicts == 1
    assert r.warnings[0] == ("App 'any_monitor' cannot bind to '/a/temp_monitor' - already "
                             "bound to app 'monitor'")


@pytest.mark.parametrize("policy", ["ignore", "warn", "error", "include_as_orphan"])
def test_unmanifested_policies(tmp_path: Path, policy: str) -> None:
    es, r = linker.hybrid(manifest(tmp_path, policy), NODES, 1)
    assert r.policy == policy and r.orphans == ["/misc/stray", "/other/sensor"]
    assert ("stray" in es.apps) == (policy != "ignore")
    assert bool(r.warnings) == (policy == "warn")


def test_inherit_false_keeps_the_node_out_of_collections(tmp_path: Path) -> None:
    m = manifest(tmp_path)
    m.config.inherit_runtime_resources = False
    es, _ = linker.hybrid(m, NODES, 1)
    assert es.apps["sensor"].is_online and es.apps["sensor"].node_fqn is None
    assert es.apps["sensor"].bound_fqn == "/powertrain/engine/temp_sensor"


def test_gap_fill(tmp_path: Path) -> None:
    m = manifest(tmp_path)
    es, r = linker.hybrid(m, NODES, 1, GapFill(allow_heuristic_apps=False))
    assert "stray" not in es.apps and es.apps["sensor"].is_online
    es, r = linker.hybrid(m, NODES, 1, GapFill(namespace_blacklist=("/misc",)))
    assert "stray" not in es.apps and r.filtered_by_gap_fill == 1
    es, r = linker.hybrid(m, NODES, 1, GapFill(namespace_whitelist=("/powertrain",)))
    assert "stray" not in es.apps and r.filtered_by_gap_fill == 5
    assert es.apps["sensor"].is_online  # linking still saw the node
    es, r = linker.hybrid(m, NODES, 1, GapFill(allow_heuristic_functions=True))
    assert es.functions["misc"].hosts == ["stray"] and es.functions["misc"].source == "heuristic"


def test_id_collisions_across_types(tmp_path: Path) -> None:
    m = manifest(tmp_path)
    es, r = linker.hybrid(m, [*NODES, GraphNode("ecu", "/x")], 1)
    assert es.apps["ecu"].source == "heuristic" and "ecu" in es.components
    assert r.id_collisions == ["ecu"]


def test_manifest_only_is_the_declared_set(tmp_path: Path) -> None:
    es, r = linker.manifest_only(manifest(tmp_path), 3)
    assert set(es.apps) == {"sensor", "monitor", "any_monitor", "by_topic", "ghost", "outside"}
    assert not any(a.is_online for a in es.apps.values())
    assert not r.linked and r.pipeline()["layers"] == ["manifest"]
    assert [c.id for c in es.subcomponents("ecu")] == ["board"]


def test_entity_sets_do_not_share_state_with_the_manifest(tmp_path: Path) -> None:
    m = manifest(tmp_path)
    es, _ = linker.hybrid(m, NODES, 1)
    assert m.apps[0].node_fqn is None and not m.apps[0].is_online
    es.components["ecu"].identity["x"] = 1
    assert "x" not in m.components[0].identity


CSV = """\ufeffID , Manufacturer, model,serial,HW_REV,fw,area,rack,
pump-1,Grundfos,CR-5,GP-1,A,1.0,engine,R2,
,Nobody,X,,,,,,
"pump,2",Acme,Y,,,,,,
pump-1,Dup,Z,,,,,,

"note-1",  "Acme, Inc.","multi
line",S-3,,,ghost-area,,
"""


def test_csv_rows_aliases_and_skipped_lines() -> None:
    rows, skipped = parse_csv(CSV)
    assert [(line, c.id) for line, c in rows] == [(2, "pump-1"), (7, "note-1")]
    pump = rows[0][1]
    assert pump.source == "inventory" and pump.area == "engine"
    assert pump.name == "Grundfos CR-5"
    assert pump.identity == {
        "manufacturer": "Grundfos", "model": "CR-5", "serialNumber": "GP-1",
        "hardwareRevision": "A", "firmwareVersion": "1.0", "extra": {"rack": "R2"},
        "_provenance": {"manufacturer": "inventory", "model": "inventory",
                        "serial_number": "inventory", "hardware_revision": "inventory",
                        "firmware_version": "inventory", "extra.rack": "inventory"}}
    assert rows[1][1].identity["manufacturer"] == "Acme, Inc."
    assert rows[1][1].identity["model"] == "multi\nline"
    assert [(s.line, s.reason.split(" (")[1][:9]) for s in skipped] == [
        (3, "empty id)"), (4, "id 'pump,"), (5, "duplicate")]


def test_csv_without_id_column_or_header() -> None:
    with pytest.raises(CsvError, match="no 'id' column"):
        parse_csv("name,model\nx,y\n")
    with pytest.raises(CsvError, match="no header"):
        parse_csv("\n\n")


def test_csv_merge_into_manifest(tmp_path: Path) -> None:
    csv = tmp_path / "inv.csv"
    csv.write_text("id,manufacturer,serial,area,rack\necu,Other,SN-9,,R7\n"
                   "sensor,X,,,\nnew-1,Y,S1,ghost,\nnew-2,Z,S2,powertrain,\n")
    path = tmp_path / "m.yaml"
    path.write_text((MANIFEST % "warn").replace(
        "    area: engine\n", "    area: engine\n    identity: {manufacturer: Acme}\n", 1))
    m = load(str(path), csv_path=str(csv), strict=False)
    comps = {c.id: c for c in m.components}
    # a manifest component keeps its definition; the CSV nameplate only fills gaps
    assert comps["ecu"].source == "manifest"
    assert comps["ecu"].identity["manufacturer"] == "Acme"
    assert comps["ecu"].identity["serialNumber"] == "SN-9"
    assert comps["ecu"].identity["_provenance"] == {
        "manufacturer": "manifest", "serial_number": "inventory", "extra.rack": "inventory"}
    assert "sensor" not in comps  # an app's id: row skipped
    assert comps["new-1"].area is None and comps["new-2"].area == "powertrain"
    assert [s.line for s in m.inventory_skipped] == [3]
    big = tmp_path / "big.csv"
    big.write_text("id\n" + "x\n" * 600000)
    with pytest.raises(ManifestError, match=r"\[INVENTORY_CSV\].*limit"):
        load(str(path), csv_path=str(big), strict=False)
    bad = tmp_path / "bad.csv"
    bad.write_text("name\nx\n")
    with pytest.raises(ManifestError, match=r"\[INVENTORY_CSV\] line 1"):
        load(str(path), csv_path=str(bad), strict=False)


def test_identity_merge_by_source_rank() -> None:
    have = {"model": "A", "_provenance": {"model": "inventory"}}
    new = {"model": "B", "serialNumber": "S", "_provenance": {"model": "opcua",
                                                              "serial_number": "heuristic"}}
    out = merge_identity(have, new)
    assert out == {"model": "B", "serialNumber": "S",
                   "_provenance": {"model": "opcua", "serial_number": "heuristic"}}
    assert merge_identity(new, have)["model"] == "B"  # inventory ranks below opcua


def test_relationship_answers_resolved_and_missing() -> None:
    from gateway.model.entities import Entity, EntitySet
    from gateway.model.relations import Missing, belongs_to, is_located_on

    es = EntitySet()
    es.areas["a"] = Entity("areas", "a", "A")
    for cid, area in (("in-area", "a"), ("no-area", None), ("lost-area", "gone")):
        es.components[cid] = Entity("components", cid, cid, area=area)
    app = Entity("apps", "x", "x")
    assert is_located_on(es, app) == [] and belongs_to(es, app) == []
    app.component = "in-area"
    assert is_located_on(es, app) == [es.components["in-area"]]
    assert belongs_to(es, app) == [es.areas["a"]]
    app.component = "no-area"
    assert belongs_to(es, app) == []
    app.component = "lost-area"
    assert belongs_to(es, app) == [Missing("area", "gone")]
    app.component = "ghost"
    assert is_located_on(es, app) == [Missing("component", "ghost")]
    assert belongs_to(es, app) == [Missing("area", "", unresolved_component="ghost")]


def test_identity_merge_tolerates_odd_peer_nameplates() -> None:
    have = {"model": "A", "_provenance": {"model": "manifest"}}
    out = merge_identity(have, {"serialNumber": "S", "extra": "not-a-map",
                                "_provenance": ["bad"]})
    assert out == {"model": "A", "serialNumber": "S", "_provenance": {"model": "manifest"}}
    assert have == {"model": "A", "_provenance": {"model": "manifest"}}  # not mutated


def test_merge_policies_decide_names_and_conflicts(tmp_path: Path) -> None:
    from gateway.discovery.merge import policies

    m = manifest(tmp_path)
    m.apps[0].name = "Engine temperature"
    nodes = [GraphNode("sensor", "/powertrain")]  # runtime id `sensor` = the manifest app's
    es, r = linker.hybrid(m, nodes, 1)
    assert es.apps["sensor"].name == "Engine temperature" and r.conflicts == []
    assert r.enriched_count == 1
    pol, warnings = policies({"runtime.identity": "authoritative"})
    es, r = linker.hybrid(m, nodes, 1, pol=pol)
    assert es.apps["sensor"].name == "Engine temperature"  # the owner wins a tie
    assert r.conflicts == [{"entity_id": "sensor", "field_group": "identity",
                            "winning_layer": "manifest", "losing_layer": "runtime"}]
    assert r.pipeline()["conflict_count"] == 1
    pol, _ = policies({"runtime.identity": "authoritative"}, allow_manifest_override=False)
    es, r = linker.hybrid(m, nodes, 1, pol=pol)
    assert es.apps["sensor"].name == "sensor" and r.conflicts == []
    pol, warnings = policies({"runtime.identity": "loud", "robot.identity": "fallback",
                              "manifest.status": ""})
    assert len(warnings) == 2 and pol == policies({})[0]


def test_equal_enrichment_unions_collections() -> None:
    from gateway.discovery.merge import merge_app, policies
    from gateway.model.entities import Entity

    pol, _ = policies({"manifest.identity": "enrichment", "runtime.identity": "enrichment"})
    app = Entity("apps", "a", "A", tags=["x"])
    merge_app(app, Entity("apps", "a", "a-node", description="from node", tags=["y", "x"]),
              pol, [])
    assert app.tags == ["x", "y"] and app.name == "A" and app.description == "from node"
