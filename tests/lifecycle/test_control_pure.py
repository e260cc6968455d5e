"""Lifecycle plans and the script catalog (definitions, parameters, command, environment)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gateway.lifecycle import plans as lc
from gateway.scripts.catalog import (
    Script,
    ScriptError,
    UploadStore,
    check_schema,
    command,
    run_env,
    scan_managed,
    scrubbed_env,
    validate_parameters,
)


def labels(transition: str, state: int) -> list[str]:
    return [s.label for s in lc.plan(transition, state)]


def test_lifecycle_plans_from_each_primary_state() -> None:
    assert labels("start", lc.UNCONFIGURED) == ["configure", "activate"]
    assert labels("start", lc.INACTIVE) == ["activate"]
    assert labels("start", lc.ACTIVE) == []
    assert labels("restart", lc.ACTIVE) == ["deactivate", "cleanup", "configure", "activate"]
    assert labels("restart", lc.INACTIVE) == ["cleanup", "configure", "activate"]
    assert labels("shutdown", lc.ACTIVE) == ["deactivate", "cleanup", "unconfigured_shutdown"]
    assert labels("shutdown", lc.UNCONFIGURED) == ["unconfigured_shutdown"]
    assert labels("force-shutdown", lc.ACTIVE) == ["active_shutdown"]
    assert labels("force-shutdown", lc.INACTIVE) == ["inactive_shutdown"]
    assert labels("shutdown", lc.FINALIZED) == []
    steps = lc.plan("restart", lc.ACTIVE)
    assert [s.goal for s in steps] == [lc.INACTIVE, lc.UNCONFIGURED, lc.INACTIVE, lc.ACTIVE]
    assert [s.transition_id for s in lc.plan("start", lc.UNCONFIGURED)] == [1, 3]


def test_lifecycle_preconditions() -> None:
    with pytest.raises(lc.PlanError, match="finalized"):
        lc.plan("start", lc.FINALIZED)
    with pytest.raises(lc.PlanError, match="between primary states"):
        lc.plan("start", 13)  # activating
    with pytest.raises(ValueError):
        lc.plan("reboot", lc.ACTIVE)


def test_managed_scripts_from_a_directory(tmp_path: Path) -> None:
    (tmp_path / "hello.sh").write_text("echo hi\n")
    (tmp_path / "check.py").write_text("print(1)\n")
    (tmp_path / "check.yaml").write_text(
        "name: Check\ndescription: one check\ntimeout_sec: 5\nentity_filter: ['apps/*']\n"
        "parameters_schema: {type: object, properties: {n: {type: integer}}}\n")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "bad.bash").write_text("true\n")
    (tmp_path / "bad.json").write_text(json.dumps({"timeout_sec": 0}))
    scripts, problems = scan_managed(tmp_path)
    by_id = {s.id: s for s in scripts}
    assert set(by_id) == {"hello", "check"}
    assert by_id["hello"].format == "sh" and by_id["hello"].managed
    check = by_id["check"]
    assert (check.name, check.description, check.timeout_sec) == ("Check", "one check", 5.0)
    assert check.applies_to("apps", "x") and not check.applies_to("components", "x")
    assert check.describe()["parameters_schema"]["properties"]["n"] == {"type": "integer"}
    assert "parameters_schema" not in by_id["hello"].describe()
    assert len(problems) == 1 and "timeout_sec" in problems[0]


def test_parameters_schema_validation() -> None:
    schema = check_schema({"type": "object", "required": ["n"],
                           "properties": {"n": {"type": "integer", "maximum": 3}}})
    assert validate_parameters(schema, {"n": 2}) == []
    assert validate_parameters(None, {"anything": 1}) == []
    problems = validate_parameters(schema, {"n": 9})
    assert len(problems) == 1 and problems[0].startswith("n:")
    assert "required" in validate_parameters(schema, {})[0]
    with pytest.raises(ScriptError, match="not a valid JSON Schema"):
        check_schema({"type": "nonsense"})


def test_command_and_environment(tmp_path: Path) -> None:
    sc = Script("s", "s", tmp_path / "s.py", "python", True,
                args=[{"name": "count", "flag": "--count"}, {"name": "v", "flag": "-v",
                                                              "type": "bool"}],
                env={"MODE": "test"})
    assert command(sc, {"count": 3, "v": True, "other": 1}) == [
        sys.executable, str(tmp_path / "s.py"), "--count", "3", "-v"]
    assert command(sc, {"v": False}) == [sys.executable, str(tmp_path / "s.py")]
    base = scrubbed_env({"PATH": "/bin", "JWT_SECRET": "x", "API_TOKEN": "y",
                         "DIAG_GATEWAY_CONFIG": "z", "HOME": "/root",
                         "HIDDEN": "peer-credential-value-123", "ROS_DOMAIN_ID": "5"},
                        ["peer-credential-value-123", ""])
    assert base == {"PATH": "/bin", "HOME": "/root", "ROS_DOMAIN_ID": "5"}
    env = run_env(base, sc, {"count": 3, "name": "a b"}, "apps", "a1", "exec_1")
    assert env["MODE"] == "test" and env["DIAG_ENTITY_ID"] == "a1"
    assert env["DIAG_EXECUTION_ID"] == "exec_1" and env["PARAM_COUNT"] == "3"
    assert env["PARAM_NAME"] == "a b"
    assert json.loads(env["DIAG_SCRIPT_PARAMETERS"]) == {"count": 3, "name": "a b"}


def test_upload_store_round_trip(tmp_path: Path) -> None:
    store = UploadStore(tmp_path / "up")
    sc = store.save("apps", "a1", "run.bash", b"echo hi\n", {"name": "Run"})
    assert sc.path.read_bytes() == b"echo hi\n" and sc.format == "bash" and not sc.managed
    assert sc.applies_to("apps", "a1") and not sc.applies_to("apps", "a2")
    (loaded,) = store.load()
    assert (loaded.id, loaded.name, loaded.owner) == (sc.id, "Run", ("apps", "a1"))
    store.delete(sc)
    assert store.load() == [] and not sc.path.exists()
