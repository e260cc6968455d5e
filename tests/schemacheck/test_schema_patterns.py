"""Schema regexes match on RE2: a backtracking pattern answers at once and never freezes the
gateway; what RE2 cannot express is refused when the schema is checked.

Without the fix a run holds the GIL for hours, so nothing in its process (pytest's own timers
included) could report it: each scenario runs in a child interpreter that the test kills at
its budget.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.schemacheck.safeschema import SchemaRefused, check, problems

ROOT = Path(__file__).resolve().parents[2]
CHILD_BUDGET_S = 120.0
EVIL = "^(a+)+$"
EVIL_INPUT = "a" * 40 + "!"
SCHEMA = {"properties": {"x": {"type": "string", "pattern": EVIL}}}


def _in_child(call: str) -> Any:
    """JSON printed by `call` (a function of this module) in a fresh interpreter; fails the
    test when the child is still busy at the budget."""
    code = f"import json; from tests.schemacheck.test_schema_patterns import *; print(json.dumps({call}))"
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, timeout=CHILD_BUDGET_S, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{call} was still running after {CHILD_BUDGET_S:g} s (regex backtracking)")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def validate_evil() -> list[str]:
    """problems() of the backtracking pattern and of patternProperties/additionalProperties."""
    out = problems(check(SCHEMA), {"x": EVIL_INPUT})
    keyed = check({"patternProperties": {EVIL: {"type": "integer"}},
                   "additionalProperties": False})
    out += problems(keyed, {EVIL_INPUT: 1, "aaaa": 1})
    out += problems(check({"propertyNames": {"pattern": EVIL}}), {EVIL_INPUT: 1})
    return out


def test_backtracking_patterns_answer_at_once() -> None:
    got = _in_child("validate_evil()")
    assert got == [f"x: {EVIL_INPUT!r} does not match {EVIL!r}",
                   f"(root): {EVIL_INPUT!r} does not match any of the regexes: {EVIL!r}",
                   f"(root): {EVIL_INPUT!r} does not match {EVIL!r}"]


def test_patterns_still_mean_what_they_say() -> None:
    schema = check({"type": "object", "properties": {"id": {"pattern": "^[a-z]{2}\\d+$"}},
                    "patternProperties": {"^p_": {"type": "integer"}},
                    "additionalProperties": {"type": "string"}})
    assert problems(schema, {"id": "ab12", "p_x": 3, "other": "s"}) == []
    assert problems(schema, {"id": "ab12\n"}) == ["id: 'ab12\\n' does not match '^[a-z]{2}\\\\d+$'"]
    assert problems(schema, {"id": "xab1y"}) != []  # anchors hold
    assert problems(schema, {"p_x": "no"}) == ["p_x: 'no' is not of type 'integer'"]
    assert problems(schema, {"other": 1}) == ["other: 1 is not of type 'string'"]
    assert problems(check({"pattern": "b"}), "abc") == []  # unanchored, as JSON Schema says
    lone = problems(check({"pattern": "a"}), "\ud800")
    assert lone == ["(root): strings must be valid Unicode (a lone surrogate is not)"]


@pytest.mark.parametrize("schema, named", [
    ({"properties": {"x": {"pattern": "^(a)\\1$"}}}, "'^(a)\\\\1$' at /properties/x"),
    ({"pattern": "(?=a)b"}, "'(?=a)b' at /"),
    ({"patternProperties": {"(?<!x)y": {}}}, "'(?<!x)y' at /"),
])
def test_patterns_re2_cannot_run_are_refused_by_name(schema: dict[str, Any], named: str) -> None:
    with pytest.raises(SchemaRefused, match="pattern .* is refused") as err:
        check(schema)
    assert named in str(err.value)


def test_pattern_properties_with_unevaluated_properties_are_refused() -> None:
    with pytest.raises(SchemaRefused, match="unevaluatedProperties"):
        check({"patternProperties": {"^a": {}}, "unevaluatedProperties": False})


def _app(tmp: str, *extra: str) -> Any:
    """The gateway app with scripts on, without ROS, serving one component `host`."""
    from gateway.app import make_app
    from gateway.http.state import STATE
    from gateway.model.entities import Entity, EntitySet
    from gateway.settings.config import load

    (Path(tmp) / "managed").mkdir()
    app = make_app(load(None, [f"state_dir={tmp}", f"scripts.scripts_dir={tmp}/managed",
                               "scripts.allow_anonymous=true",
                               *(extra or ["scripts.allow_root=true"])]))
    app.cleanup_ctx.clear()  # no ROS: entities and what /health reads are given below
    entities = EntitySet()
    entities.components["host"] = Entity("components", "host", "host")
    state = app[STATE]
    state.cache = SimpleNamespace(entities=entities, collisions=[], stats=dict)
    ready = asyncio.Event()
    ready.set()
    state.poller = SimpleNamespace(events=0, ready=ready)
    state.bridge = SimpleNamespace(health=lambda: {"worker_alive": True})
    state.pool = SimpleNamespace(stats=lambda events: {})
    return app


def http_scenario(tmp: str) -> dict[str, Any]:
    """Upload a script with the backtracking pattern to an in-process gateway, run it with a
    bad x, and poll /health meanwhile; statuses, bodies and how many health answers came."""
    from aiohttp import FormData
    from aiohttp.test_utils import TestClient, TestServer

    app = _app(tmp)

    async def go() -> dict[str, Any]:
        async with TestClient(TestServer(app)) as client:
            form = FormData()
            form.add_field("file", b"echo hi\n", filename="s.sh")
            form.add_field("metadata", json.dumps({"parameters_schema": SCHEMA}))
            up = await client.post("/api/v1/components/host/scripts", data=form)
            sid = (await up.json())["id"]
            healthy: list[int] = []
            running = True

            async def poll() -> None:
                while running:
                    async with client.get("/api/v1/health") as r:
                        healthy.append(r.status)
                    await asyncio.sleep(0.01)

            poller = asyncio.ensure_future(poll())
            run = await client.post(f"/api/v1/components/host/scripts/{sid}/executions",
                                    json={"execution_type": "now",
                                          "parameters": {"x": EVIL_INPUT}})
            body = await run.json()
            deadline = time.monotonic() + 60
            while not healthy and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            running = False
            await poller
            return {"upload": up.status, "run": run.status, "body": body,
                    "health": sorted(set(healthy))}

    return asyncio.run(go())


def test_a_backtracking_pattern_answers_400_and_health_stays_up(tmp_path: Path) -> None:
    got = _in_child(f"http_scenario({str(tmp_path)!r})")
    assert got["upload"] == 201
    assert got["run"] == 400, got["body"]
    assert got["body"]["error_code"] == "invalid-parameter"
    assert got["body"]["parameters"]["details"] == [f"x: {EVIL_INPUT!r} does not match {EVIL!r}"]
    assert got["health"] == [200]


def test_an_upload_with_a_pattern_re2_cannot_run_is_400_naming_it(tmp_path: Path) -> None:
    got = _in_child(f"upload_scenario({str(tmp_path)!r})")
    assert got["status"] == 400 and got["body"]["error_code"] == "invalid-parameter"
    assert "'(a)\\\\1'" in got["body"]["message"], got["body"]


def upload_scenario(tmp: str) -> dict[str, Any]:
    """Upload a script whose schema holds a backreference; status and body."""
    from aiohttp import FormData
    from aiohttp.test_utils import TestClient, TestServer

    app = _app(tmp)

    async def go() -> dict[str, Any]:
        async with TestClient(TestServer(app)) as client:
            form = FormData()
            form.add_field("file", b"echo hi\n", filename="s.sh")
            form.add_field("metadata", json.dumps(
                {"parameters_schema": {"properties": {"x": {"pattern": "(a)\\1"}}}}))
            up = await client.post("/api/v1/components/host/scripts", data=form)
            return {"status": up.status, "body": await up.json()}

    return asyncio.run(go())


def test_sidecars_and_manifest_entries_refuse_patterns_re2_cannot_run(tmp_path: Path) -> None:
    from gateway.discovery.manifest import ManifestError, load
    from gateway.scripts.catalog import scan_managed
    from tests.discovery.test_manifest_load import BASE, write

    (tmp_path / "a.sh").write_text("true\n")
    (tmp_path / "a.json").write_text(json.dumps({"parameters_schema": {"pattern": "(a)\\1"}}))
    scripts, skipped = scan_managed(tmp_path)
    assert scripts == [] and "pattern '(a)\\\\1' at / is refused" in skipped[0]
    text = BASE.replace("apps:\n", """scripts:
  - {id: diag, path: /opt/diag.sh, format: bash, parameters_schema: {pattern: "(?=x)"}}
apps:
""")
    with pytest.raises(ManifestError, match="is refused") as exc:
        load(write(tmp_path, text))
    assert "SCHEMA" in str(exc.value) and "(?=x)" in str(exc.value)
