"""Manifest loading and validation as pure logic: schema, rule ids, fragments, locks, scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.discovery.manifest import ManifestError, load
from gateway.discovery.validate import find_cycle

ROOT = Path(__file__).resolve().parents[2]
BASE = """\
manifest_version: "1.0"
metadata: {name: t, version: "2.0"}
areas:
  - id: powertrain
    subareas:
      - id: engine
components:
  - id: ecu
    area: engine
    identity: {manufacturer: Acme, model: E-100, serial_number: SN-1, extra: {rack: R2}}
    lock: {required_scopes: [configurations], breakable: false, max_expiration: -5}
apps:
  - id: temp
    is_located_on: ecu
    ros_binding: {node_name: temp_sensor, namespace: /powertrain/engine}
functions:
  - id: f
    hosted_by: [temp]
"""


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def rules(exc: pytest.ExceptionInfo[ManifestError]) -> list[str]:
    return [i.rule for i in exc.value.issues]


def test_the_shipped_demo_manifest_loads() -> None:
    m = load(str(ROOT / "deploy/demo_manifest.yaml"),
             csv_path=str(ROOT / "deploy/demo_inventory.csv"))
    assert {a.id for a in m.areas} >= {"powertrain", "chassis", "body", "perception"}
    assert len([a for a in m.apps if a.binding]) == 13
    assert any(c.source == "inventory" for c in m.components)
    assert m.counts()["functions"] == 4


def test_schema_fields_nested_areas_identity_and_lock(tmp_path: Path) -> None:
    m = load(write(tmp_path, BASE))
    engine = next(a for a in m.areas if a.id == "engine")
    assert engine.parent == "powertrain" and engine.namespace == "/engine"
    assert engine.name == "engine"  # name defaults to the id
    ecu = m.components[0]
    assert ecu.identity == {
        "manufacturer": "Acme", "model": "E-100", "serialNumber": "SN-1",
        "extra": {"rack": "R2"},
        "_provenance": {"manufacturer": "manifest", "model": "manifest",
                        "serial_number": "manifest", "extra.rack": "manifest"}}
    assert ecu.lock == {"required_scopes": ["configurations"], "breakable": False,
                        "max_expiration": 0}  # negative clamped to 0
    assert ecu.attrs["fqn"] == "/ecu"
    app = m.apps[0]
    assert app.binding == {"node_name": "temp_sensor", "namespace": "/powertrain/engine",
                           "topic_namespace": ""}
    assert app.attrs["line"] == 13
    assert m.metadata == {"name": "t", "version": "2.0"}
    assert m.config.unmanifested_nodes == "warn" and m.config.inherit_runtime_resources


def test_nested_subcomponents_and_parent_component_id(tmp_path: Path) -> None:
    text = BASE + """\
  - id: g
    hosts: [ecu]
"""
    text = text.replace("components:\n", """components:
  - id: board
    parent_component_id: ecu
  - id: body
    subcomponents:
      - id: door
        subcomponents: [{id: latch}]
""")
    m = load(write(tmp_path, text))
    parents = {c.id: c.parent for c in m.components}
    assert parents == {"board": "ecu", "body": None, "door": "body", "latch": "door",
                       "ecu": None}
    assert next(f for f in m.functions if f.id == "g").hosts == ["ecu"]


def test_binding_namespace_defaults_to_any(tmp_path: Path) -> None:
    m = load(write(tmp_path, BASE.replace(", namespace: /powertrain/engine", "")))
    assert m.apps[0].binding is not None and m.apps[0].binding["namespace"] == "*"


@pytest.mark.parametrize(("change", "rule", "entity"), [
    (('"1.0"', '"2.0"'), "R001", ""),
    (("  - id: engine\n", "  - id: engine\n  - id: engine\n"), "R002", "engine"),
    (("  - id: ecu\n", "  - id: ecu\n    area: engine\n  - id: ecu\n"), "R003", "ecu"),
    (("apps:\n", "apps:\n  - id: temp\n"), "R004", "temp"),
    (("functions:\n", "functions:\n  - id: ecu\n"), "R005", "ecu"),
    (("    area: engine\n", "    area: nowhere\n"), "R006", "ecu"),
    (("  - id: ecu\n", "  - id: ecu\n    parent_component_id: ghost\n"), "R006", "ecu"),
    (("      - id: engine\n", "      - id: engine\n  - id: x\n    parent_area: nope\n"),
     "R006", "x"),
    (("    is_located_on: ecu\n", "    is_located_on: ghost\n"), "R007", "temp"),
    (("apps:\n", "apps:\n  - id: t2\n    depends_on: [ghost]\n"), "R008", "t2"),
    (("    hosted_by: [temp]\n", "    hosted_by: [temp, ghost]\n"), "R009", "f"),
    (("apps:\n", "apps:\n  - id: t2\n    ros_binding: {node_name: temp_sensor, "
      "namespace: /powertrain/engine}\n"), "R010", "temp"),
    (("apps:\n", "apps:\n  - id: a1\n    depends_on: [a2]\n  - id: a2\n    depends_on: [a1]\n"),
     "R011", "a1"),
    (("functions:\n", "functions:\n  - id: f1\n    depends_on: [f2]\n  - id: f2\n"
      "    depends_on: [f1]\n"), "R011", "f1"),
    (("apps:\n", "scripts:\n  - {id: temp, path: /x.sh, format: sh}\napps:\n"), "R012", "temp"),
    (("apps:\n", "apps:\n  - id: t2\n    external: true\n    ros_binding: {node_name: x}\n"),
     "R013", "t2"),
])
def test_each_rule_is_named_with_its_entity(tmp_path: Path, change: tuple[str, str],
                                            rule: str, entity: str) -> None:
    text = BASE.replace(*change)
    assert text != BASE
    with pytest.raises(ManifestError) as exc:
        load(write(tmp_path, text))
    assert rule in rules(exc), exc.value
    issue = next(i for i in exc.value.issues if i.rule == rule)
    if entity:
        assert issue.entity == entity
        assert issue.line > 0 and issue.file.endswith("m.yaml")
    assert f"[{rule}]" in str(exc.value)


def test_warnings_pass_when_not_strict(tmp_path: Path) -> None:
    text = BASE.replace("    hosted_by: [temp]\n", "    hosted_by: [temp, ghost]\n")
    m = load(write(tmp_path, text), strict=False)
    assert [w.rule for w in m.warnings] == ["R009"]


def test_yaml_errors_give_the_line(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as exc:
        load(write(tmp_path, BASE.replace("  - id: f\n", "  - id: f: g\n")))
    (issue,) = exc.value.issues
    assert issue.rule == "LOAD" and issue.line == 17
    assert "m.yaml:17" in str(exc.value) and "not valid YAML" in str(exc.value)


def test_missing_version_file_and_size_limit(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"\[LOAD\] 'manifest_version' is required"):
        load(write(tmp_path, "areas: []\n"))
    with pytest.raises(ManifestError, match=r"\[LOAD\] cannot read"):
        load(str(tmp_path / "absent.yaml"))
    big = write(tmp_path, 'manifest_version: "1.0"\n#' + "x" * (1024 * 1024) + "\n", "big.yaml")
    with pytest.raises(ManifestError, match="limit is 1048576"):
        load(big)
    with pytest.raises(ManifestError, match="top level must be a mapping"):
        load(write(tmp_path, "- 1\n"))


def test_bad_ids_and_field_kinds_are_schema_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as exc:
        load(write(tmp_path, BASE.replace("  - id: temp\n", "  - id: 'te:mp'\n")))
    assert rules(exc)[0] == "SCHEMA" and "'te:mp'" in str(exc.value)
    with pytest.raises(ManifestError) as exc:
        load(write(tmp_path, BASE.replace("ros_binding: {", "ros_binding: [").replace(
            "engine}", "engine]")))
    assert "SCHEMA" in rules(exc)
    with pytest.raises(ManifestError) as exc:
        load(write(tmp_path, BASE.replace("model: E-100", "model: [E, 100]")))
    (issue,) = exc.value.issues
    assert (issue.rule, issue.entity, issue.line) == ("SCHEMA", "ecu", 8)
    assert "identity 'model' must be a string" in issue.message


def test_config_block_policies_and_advisories(tmp_path: Path) -> None:
    text = BASE + "config: {unmanifested_nodes: ERROR, inherit_runtime_resources: false}\n"
    m = load(write(tmp_path, text))
    assert m.config.unmanifested_nodes == "error" and not m.config.inherit_runtime_resources
    m = load(write(tmp_path, BASE + "discovery: {unmanifested_nodes: ignore}\n"
                   "config: {unmanifested_nodes: loud}\n"))
    assert m.config.unmanifested_nodes == "warn"
    assert [a.rule for a in m.advisories] == ["R014"]  # advisory only: the load succeeds


def test_scripts_top_level_and_per_entity(tmp_path: Path) -> None:
    text = BASE.replace("apps:\n", """scripts:
  - {id: diag, path: /opt/diag.sh, format: bash, entity_filter: "components/*",
     env: {A: 1}, args: [{name: n, type: int, flag: -n}], parameters_schema: {type: object}}
apps:
""").replace("    is_located_on: ecu\n", """    is_located_on: ecu
    scripts:
      - {id: temp-check, path: /opt/t.py, format: python, timeout_sec: 5}
""")
    m = load(write(tmp_path, text))
    (diag,) = m.scripts
    assert diag["entity_filter"] == ["components/*"] and diag["env"] == {"A": "1"}
    assert diag["parameters_schema"] == {"type": "object"} and diag["timeout_sec"] == 300
    (own,) = m.apps[0].scripts
    assert own["entity_filter"] == ["apps/temp"] and own["timeout_sec"] == 5
    assert m.counts()["scripts"] == 2
    with pytest.raises(ManifestError, match="'format' must be one of bash"):
        load(write(tmp_path, text.replace("format: python", "format: ruby")))
    with pytest.raises(ManifestError, match="'path' is required"):
        load(write(tmp_path, text.replace("path: /opt/t.py, ", "")))


def test_fragments_append_and_forbidden_keys(tmp_path: Path) -> None:
    frags = tmp_path / "frags"
    frags.mkdir()
    (frags / "b.yaml").write_text("apps:\n  - id: extra\n    is_located_on: ecu\n"
                                  "    lock: {breakable: false}\n")
    (frags / "a.yml").write_text("components:\n  - id: c2\n    area: powertrain\n")
    (frags / "ignored.txt").write_text("areas: nope")
    path = write(tmp_path, BASE)
    m = load(path, fragments_dir=str(frags))
    assert [c.id for c in m.components] == ["ecu", "c2"]
    extra = next(a for a in m.apps if a.id == "extra")
    assert extra.lock is None  # fragments may not carry lock blocks
    assert m.files == [path, str(frags / "a.yml"), str(frags / "b.yaml")]
    (frags / "c.yaml").write_text("areas: []\n")
    with pytest.raises(ManifestError) as exc:
        load(path, fragments_dir=str(frags))
    assert rules(exc) == ["FRAGMENT_FORBIDDEN_FIELD"]
    (frags / "c.yaml").write_text("apps: [\n")
    with pytest.raises(ManifestError) as exc:
        load(path, fragments_dir=str(frags))
    assert rules(exc) == ["FRAGMENT_PARSE"]
    (frags / "c.yaml").write_text("apps:\n  - id: temp\n")
    with pytest.raises(ManifestError) as exc:
        load(path, fragments_dir=str(frags))
    assert rules(exc) == ["R004"]  # duplicates across files: the normal validator


def test_find_cycle() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert find_cycle({"a": ["b"], "b": ["a"]}) == ["a", "b", "a"]
    assert find_cycle({"a": ["a"]}) == ["a", "a"]
