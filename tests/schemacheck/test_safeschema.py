"""Schemas that never fetch: local refs only, bounds, validation off the loop, manifest rules."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gateway.discovery.manifest import ManifestError, load
from gateway.schemacheck import safeschema
from gateway.schemacheck.safeschema import SchemaRefused, check, problems, problems_off_loop
from gateway.scripts.catalog import ScriptError, managed_from, scan_managed
from tests.discovery.test_manifest_load import BASE, write


class _Counting(BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:  # http.server's name
        type(self).hits += 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    _Counting.hits = 0
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/s.json"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("ref", ["http://127.0.0.1:1/x.json", "file:///etc/passwd",
                                 "https://example.invalid/s#/a", "other.json", "#anchor",
                                 "#/$defs/missing"])
def test_refs_that_leave_the_schema_are_refused_and_named(ref: str) -> None:
    for schema in ({"$ref": ref}, {"type": "object", "properties": {"a": {"$ref": ref}}},
                   {"allOf": [{"$dynamicRef": ref}]}):
        with pytest.raises(SchemaRefused) as exc:
            check(schema)
        assert repr(ref) in str(exc.value)


def test_a_remote_ref_is_never_fetched(server: str) -> None:
    with pytest.raises(SchemaRefused):
        check({"$ref": server})
    # even a schema that skipped the check (stored before it existed) does not fetch
    assert problems({"$ref": server}, 1) == [
        f"(schema): reference {server!r} does not resolve; nothing is fetched"]
    assert problems({"properties": {"a": {"$ref": server}}}, {"a": 1})[0].startswith("(schema)")
    assert _Counting.hits == 0


def test_local_refs_validate() -> None:
    schema = {"$defs": {"n": {"type": "integer", "minimum": 1}}, "type": "object",
              "properties": {"n": {"$ref": "#/$defs/n"}, "tree": {"$ref": "#"}}}
    assert check(schema) is schema
    assert problems(schema, {"n": 1, "tree": {"n": 2}}) == []
    assert problems(schema, {"n": 0}) == ["n: 0 is less than the minimum of 1"]
    assert problems(None, {"anything": 1}) == []


def test_bounds() -> None:
    deep: Any = {"type": "object"}
    for _ in range(safeschema.MAX_DEPTH):
        deep = {"properties": {"a": deep}}
    with pytest.raises(SchemaRefused, match="nested deeper"):
        check(deep)
    big = {"enum": ["x" * 1000] * 70}
    with pytest.raises(SchemaRefused, match="bytes; at most"):
        check(big)
    with pytest.raises(SchemaRefused, match="an \\$id"):
        check({"properties": {"a": {"$id": "http://elsewhere/", "type": "string"}}})
    with pytest.raises(SchemaRefused, match="not a valid JSON Schema"):
        check({"type": 5})
    instance: Any = 1
    for _ in range(40):
        instance = [instance]
    assert "nested deeper" in problems({"type": "array"}, instance)[0]
    loop = {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    assert problems(check(loop), 1) == ["(schema): references loop without end"]


def test_validation_runs_off_the_loop_with_a_budget() -> None:
    from gateway.schemacheck import schema_worker
    from tests.schemacheck.test_schema_worker import doubling

    async def scenario() -> tuple[list[str], list[str], int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        try:
            late = await problems_off_loop(doubling(30), "x", timeout_s=1.0)
            ok = await problems_off_loop({"type": "integer"}, "x", timeout_s=60)
        finally:
            ticker.cancel()
            await schema_worker.close()
        return late, ok, ticks

    late, ok, ticks = asyncio.run(scenario())
    assert "took longer than 1 s" in late[0]
    assert ok == ["(root): 'x' is not of type 'integer'"] and ticks >= 5  # the loop ran on


def test_sidecars_and_manifest_entries_refuse_remote_refs(tmp_path: Path, server: str) -> None:
    with pytest.raises(ScriptError, match="not a local reference"):
        managed_from({"parameters_schema": {"$ref": server}}, tmp_path / "a.sh", "a")
    (tmp_path / "a.sh").write_text("true\n")
    (tmp_path / "a.json").write_text(json.dumps({"parameters_schema": {"$ref": server}}))
    scripts, skipped = scan_managed(tmp_path)
    assert scripts == [] and "not a local reference" in skipped[0]
    text = BASE.replace("apps:\n", f"""scripts:
  - {{id: diag, path: /opt/diag.sh, format: bash, parameters_schema: {{$ref: "{server}"}}}}
apps:
""")
    with pytest.raises(ManifestError, match="not a local reference") as exc:
        load(write(tmp_path, text))
    assert "SCHEMA" in str(exc.value) and server in str(exc.value)
    assert _Counting.hits == 0


def test_a_sidecar_yaml_bomb_is_skipped(tmp_path: Path) -> None:
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 9):
        prev = chr(ord("a") + n - 1)
        cur = chr(ord("a") + n)
        bomb.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    (tmp_path / "b.sh").write_text("true\n")
    (tmp_path / "b.yaml").write_text("\n".join(bomb) + "\n")
    (tmp_path / "ok.sh").write_text("true\n")
    scripts, skipped = scan_managed(tmp_path)
    assert [sc.id for sc in scripts] == ["ok"]
    assert "b.yaml" in skipped[0] and "alias" in skipped[0]
