"""Bulk data and scripts in process (the bulk-data and scripts handlers):
categories, uploads and their errors; script uploads, lookups and the 501 of an
unconfigured backend."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import aiohttp

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import HOST

APP = "/api/v1/apps/actuator"
BULK = ("bulk_data.categories=[calibration]",)


def _form(name: str, content: bytes, **fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", content, filename=name, content_type="text/plain")
    for key, value in fields.items():
        form.add_field(key, value)
    return form


def test_bulk_data_categories(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/bulk-data")
        assert status == 200 and body["items"] == ["rosbags", "calibration"]
        assert body[gw.xv] == {"total_count": 2, "entity_id": "actuator"}
        status, body = await gw.json("GET", f"{APP}/bulk-data/rosbags")
        assert (status, body["items"]) == (200, [])
        body = await gw.error("GET", f"{APP}/bulk-data/nope", 404)
        assert body["error_code"] == "resource-not-found"
        assert body["message"] == "Bulk-data category 'nope' not found on app 'actuator'"
        assert body["parameters"] == {"entity_id": "actuator", "category": "nope"}

    gateway(scenario, settings=BULK)


def test_upload_download_delete(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        async with gw.client.post(f"{APP}/bulk-data/calibration",
                                  data=_form("brakes.txt", b"bias=0.3", description="bias"),
                                  ) as resp:
            assert resp.status == 201
            item = await resp.json()
            assert resp.headers["Location"] == f"{APP}/bulk-data/calibration/{item['id']}"
        assert (item["name"], item["mimetype"], item["size"], item["description"]) == (
            "brakes.txt", "text/plain", 8, "bias")
        status, body = await gw.json("GET", f"{APP}/bulk-data/calibration")
        assert [i["id"] for i in body["items"]] == [item["id"]]
        async with gw.client.get(f"{APP}/bulk-data/calibration/{item['id']}") as resp:
            assert resp.status == 200 and await resp.read() == b"bias=0.3"
            assert resp.content_type == "text/plain"
        status, _ = await gw.json("DELETE", f"{APP}/bulk-data/calibration/{item['id']}")
        assert status == 204
        body = await gw.error("DELETE", f"{APP}/bulk-data/calibration/{item['id']}", 404)
        assert body["message"] == (f"Bulk-data '{item['id']}' not found in 'calibration' on "
                                   "app 'actuator'")
        await gw.error("GET", f"{APP}/bulk-data/calibration/{item['id']}", 404)

    gateway(scenario, settings=BULK)


def test_upload_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        form = aiohttp.FormData()
        form.add_field("description", "no file")
        body = await gw.error("POST", f"{APP}/bulk-data/calibration", 400, data=form)
        assert body["error_code"] == "invalid-request"
        assert body["message"] == "An upload is multipart/form-data with a 'file' field"
        body = await gw.error("POST", f"{APP}/bulk-data/rosbags", 400,
                              data=_form("a.txt", b"x"))
        assert body["message"] == ("Category 'rosbags' is read-only: recordings are made by "
                                   "the fault manager")
        assert body["parameters"] == {"category": "rosbags"}
        body = await gw.error("DELETE", f"{APP}/bulk-data/rosbags/x", 400)
        assert body["message"].startswith("Category 'rosbags' is managed by the fault manager")
        body = await gw.error("POST", "/api/v1/functions/chassis/bulk-data/calibration", 405,
                              data=_form("a.txt", b"x"))
        assert body["error_code"] == "invalid-request"
        assert body["message"] == ("Bulk-data on functions is read-only; upload and delete "
                                   "on components and apps")
        assert body["parameters"] == {"entity_type": "functions", "method": "POST"}
        status, body = await gw.json("GET", f"{APP}/bulk-data/calibration")
        assert body["items"] == []  # nothing was stored

    gateway(scenario, settings=BULK)


def test_scripts_without_a_backend_answer_501(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for method, path in (("GET", f"{APP}/scripts"), ("GET", f"{APP}/scripts/x"),
                             ("POST", f"{APP}/scripts/x/executions")):
            body = await gw.error(method, path, 501, json={})
            assert body["error_code"] == "not-implemented"
            assert body["message"] == "Scripts backend not configured"
            assert body["parameters"]["feature"] == "scripts"

    gateway(scenario)


def _scripts_dir(tmp: Path) -> str:
    """A managed scripts directory (empty: uploads only)."""
    path = tmp / "scripts"
    path.mkdir()
    return str(path)


def _scripts(gw_dir: str) -> tuple[str, ...]:
    return (f"scripts.scripts_dir={gw_dir}", "scripts.allow_root=true",
            "scripts.allow_anonymous=true")


def test_script_upload_list_delete(gateway: Runner, tmp_path: Path) -> None:
    scripts_dir = _scripts_dir(tmp_path)

    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/scripts")
        assert (status, body["items"]) == (200, [])
        meta = json.dumps({"name": "bleed", "description": "bleed the brakes"})
        form = _form("bleed.py", b"print('ok')\n", metadata=meta)
        async with gw.client.post(f"{APP}/scripts", data=form) as resp:
            assert resp.status == 201, await resp.text()
            made = await resp.json()
            assert resp.headers["Location"] == f"{APP}/scripts/{made['id']}"
        assert made["name"] == "bleed"
        status, body = await gw.json("GET", f"{APP}/scripts")
        assert [s["id"] for s in body["items"]] == [made["id"]]
        status, body = await gw.json("GET", f"{APP}/scripts/{made['id']}")
        assert status == 200
        assert (body["name"], body["description"], body["managed"]) == (
            "bleed", "bleed the brakes", False)
        status, body = await gw.json("GET", f"{APP}/scripts/{made['id']}/executions")
        assert (status, body["items"]) == (200, [])
        status, _ = await gw.json("DELETE", f"{APP}/scripts/{made['id']}")
        assert status == 204
        body = await gw.error("GET", f"{APP}/scripts/{made['id']}", 404)
        assert body["message"] == f"Script '{made['id']}' not found on app 'actuator'"

    gateway(scenario, settings=_scripts(scripts_dir))


def test_script_errors(gateway: Runner, tmp_path: Path) -> None:
    scripts_dir = _scripts_dir(tmp_path)

    async def scenario(gw: Gw) -> None:
        body = await gw.error("GET", f"{APP}/scripts/nope", 404)
        assert body["error_code"] == "resource-not-found"
        assert body["parameters"] == {"entity_id": "actuator", "script_id": "nope"}
        await gw.error("POST", f"{APP}/scripts/nope/executions", 404, json={})
        body = await gw.error("POST", f"{APP}/scripts", 400, data=_form("bleed.exe", b"x"))
        assert body["message"] == "Script file 'bleed.exe' must end in .sh, .bash or .py"
        status, body = await gw.json("GET", f"{APP}/scripts")
        assert body["items"] == []

    gateway(scenario, settings=_scripts(scripts_dir))


def test_anonymous_script_uploads_are_refused(gateway: Runner, tmp_path: Path) -> None:
    scripts_dir = _scripts_dir(tmp_path)

    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("POST", f"{APP}/scripts",
                                     data=_form("bleed.py", b"print(1)\n"))
        assert status in (401, 403), body
        assert "allow_anonymous" in body["message"]
        status, body = await gw.json("GET", f"{APP}/scripts")
        assert body["items"] == []

    gateway(scenario, settings=(f"scripts.scripts_dir={scripts_dir}", "scripts.allow_root=true"))


CATS = ("bulk_data.categories=[calib, firmware]", "bulk_data.max_upload_size=1000")
FILE = ("a.txt", b"abc")


async def upload(gw: Gw, path: str, form: aiohttp.FormData | bytes,
                 **kw: Any) -> tuple[int, Any]:
    return await gw.json("POST", path, data=form, **kw)


def _metadata_form(name: str, content: bytes, metadata: bytes) -> aiohttp.FormData:
    form = _form(name, content)
    form.add_field("metadata", metadata.decode(), content_type="application/json")
    return form


def test_categories_on_every_entity_type(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for path in (APP, f"/api/v1/components/{HOST}", "/api/v1/functions/sensors"):
            status, body = await gw.json("GET", f"{path}/bulk-data")
            assert (status, body["items"]) == (200, ["rosbags", "calib", "firmware"])
        body = await gw.error("GET", "/api/v1/apps/nope/bulk-data", 404)
        assert body["parameters"]["entity_id"] == "nope"
        await gw.error("GET", "/api/v1/areas/nope/bulk-data", 404)
        await gw.error("GET", f"/api/v1/components/{HOST}/subcomponents/nope/bulk-data", 404)
        status, scoped = await gw.json("GET", f"{APP}/bulk-data/docs")  # the scoped document
        assert status == 200 and scoped["openapi"] == "3.1.0"
        assert scoped["paths"] and all("/bulk-data" in p for p in scoped["paths"])

    gateway(scenario, settings=CATS)


def test_an_upload_is_seen_from_its_parents_only(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        content = b"calibration table\n" * 10
        form = _metadata_form("calib_table.csv", content, b'{"vin": "X1", "rev": 3}')
        form.add_field("description", "brake calibration")
        status, desc = await upload(gw, f"{APP}/bulk-data/calib", form)
        assert status == 201, desc
        uid = desc["id"]
        assert desc[gw.xv] == {"vin": "X1", "rev": 3}
        assert (desc["size"], desc["description"]) == (len(content), "brake calibration")
        for path in (APP, f"/api/v1/components/{HOST}", "/api/v1/functions/chassis"):
            status, body = await gw.json("GET", f"{path}/bulk-data/calib")
            assert uid in {d["id"] for d in body["items"]}, path
        for path in ("/api/v1/apps/scanner", "/api/v1/functions/sensors"):
            status, body = await gw.json("GET", f"{path}/bulk-data/calib")
            assert uid not in {d["id"] for d in body["items"]}, path
            await gw.error("GET", f"{path}/bulk-data/calib/{uid}", 404)
        async with gw.client.get(f"{APP}/bulk-data/calib/{uid}") as resp:
            assert resp.status == 200 and await resp.read() == content
            disposition = resp.content_disposition
            assert disposition is not None and disposition.type == "attachment"
            assert disposition.filename == "calib_table.csv"
        async with gw.client.get(f"{APP}/bulk-data/calib/{uid}",
                                 headers={"Range": "bytes=0-8"}) as resp:
            assert resp.status == 206 and await resp.read() == b"calibrati"
        status, body = await gw.json("GET", f"{APP}/bulk-data/firmware")
        assert body["items"] == []

    gateway(scenario, settings=CATS)


def test_upload_on_a_component(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        path = f"/api/v1/components/{HOST}/bulk-data/firmware"
        form = aiohttp.FormData()
        form.add_field("file", b"\x00\x01" * 10, filename="fw.bin",
                       content_type="application/octet-stream")
        status, desc = await upload(gw, path, form)
        assert status == 201, desc
        assert desc[gw.xv] == {} and "description" not in desc
        status, body = await gw.json("GET", path)
        assert [d["id"] for d in body["items"]] == [desc["id"]]
        status, _ = await gw.json("DELETE", f"{path}/{desc['id']}")
        assert status == 204

    gateway(scenario, settings=CATS)


def test_upload_body_errors_write_nothing(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        calib = f"{APP}/bulk-data/calib"
        status, body = await upload(gw, f"{APP}/bulk-data/unknown", _form(*FILE))
        assert (status, body["error_code"]) == (400, "invalid-request"), body
        for metadata in (b"{not json", b"[1, 2]"):
            status, body = await upload(gw, calib, _metadata_form(*FILE, metadata))
            assert (status, body["error_code"]) == (400, "invalid-request"), body
        status, body = await upload(gw, calib, b"abc",
                                    headers={"Content-Type": "application/octet-stream"})
        assert (status, body["error_code"]) == (400, "invalid-request"), body
        status, body = await upload(gw, "/api/v1/apps/nope/bulk-data/calib", _form(*FILE))
        assert status == 404, body
        status, body = await gw.json("GET", calib)
        assert body["items"] == []
        body = await gw.error("DELETE", f"{APP}/bulk-data/unknown/x", 404)
        assert body["error_code"] == "resource-not-found"

    gateway(scenario, settings=CATS)


def test_areas_and_functions_are_read_only(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        path = "/api/v1/functions/chassis/bulk-data/calib"
        body = await gw.error("POST", path, 405, data=_form(*FILE))
        assert body["error_code"] == "invalid-request"
        body = await gw.error("DELETE", f"{path}/x", 405)
        assert body["parameters"] == {"entity_type": "functions", "method": "DELETE"}
        for area in ("/api/v1/areas/any", "/api/v1/areas/any/subareas/sub"):
            status, body = await upload(gw, f"{area}/bulk-data/calib", _form(*FILE))
            assert (status, body["error_code"]) == (405, "invalid-request"), body

    gateway(scenario, settings=CATS)


def test_the_upload_size_limit_is_413_and_leaves_nothing(gateway: Runner,
                                                          tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        calib = f"{APP}/bulk-data/calib"
        status, exact = await upload(gw, calib, _form("max.bin", b"m" * 1000))
        assert (status, exact["size"]) == (201, 1000)
        body = await gw.error("POST", calib, 413, data=_form("big.bin", b"b" * 1001))
        assert body["parameters"]["max_upload_size"] == 1000
        status, body = await gw.json("GET", calib)
        assert [d["id"] for d in body["items"]] == [exact["id"]]
        assert sorted(p.name for p in (uploads / "calib").iterdir()) == [exact["id"]]
        assert not list(uploads.rglob(".incoming-*"))  # no temporary file is left

    uploads = tmp_path / "uploads"
    gateway(scenario, settings=(*CATS, f"bulk_data.storage_path={uploads}"))


CATALOG = {
    "hello.sh": 'echo "hello ${PARAM_WHO:-world} on $DIAG_ENTITY_ID"\n',
    "count.py": "import argparse\np = argparse.ArgumentParser()\n"
                "p.add_argument('--count', type=int)\nprint('count=%d' % p.parse_args().count)\n",
}
COUNT_SIDECAR = {"name": "Counter", "description": "prints its count",
                 "args": [{"name": "count", "flag": "--count"}],
                 "parameters_schema": {"type": "object", "required": ["count"],
                                       "properties": {"count": {"type": "integer",
                                                                "minimum": 1}}}}


def script_code(gw: Gw, spec_code: str) -> str:
    """The vendor code of a script refusal: the spec's, or the reference's in medkit."""
    medkit = {"script-managed": "managed-script", "script-file-too-large": "script-too-large"}
    return spec_code if gw.profile == "spec" else f"{gw.xv}-{medkit[spec_code]}"


def _catalog(tmp: Path) -> tuple[str, ...]:
    """A managed scripts directory with two scripts, and an upload directory."""
    scripts_dir = Path(_scripts_dir(tmp))
    for name, text in CATALOG.items():
        (scripts_dir / name).write_text(text)
    (scripts_dir / "count.json").write_text(json.dumps(COUNT_SIDECAR))
    (tmp / "uploads").mkdir()
    return (*_scripts(str(scripts_dir)), f"scripts.upload_dir={tmp / 'uploads'}",
            "scripts.max_concurrent_executions=2", "scripts.max_file_size_mb=1")


def test_the_managed_catalog(gateway: Runner, tmp_path: Path) -> None:
    settings = _catalog(tmp_path)

    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/scripts")
        items = {i["id"]: i for i in body["items"]}
        assert set(items) == {"hello", "count"}
        assert all(i["managed"] is True for i in items.values())
        assert "parameters_schema" not in items["hello"]
        status, detail = await gw.json("GET", f"{APP}/scripts/count")
        assert (detail["name"], detail["description"]) == ("Counter", "prints its count")
        assert detail["parameters_schema"]["required"] == ["count"]
        status, root = await gw.json("GET", "/api/v1/")
        assert root["capabilities"]["scripts"] is True
        status, health = await gw.json("GET", "/api/v1/health")
        assert health[f"{gw.xv}-scripts"]["max_concurrent_executions"] == 2
        body = await gw.error("DELETE", f"{APP}/scripts/hello", 409)
        assert (body["error_code"], body["vendor_code"]) == (
            "vendor-error", script_code(gw, "script-managed"))
        assert (tmp_path / "scripts" / "hello.sh").exists()

    gateway(scenario, settings=settings)


def test_parameters_are_validated_against_the_schema(gateway: Runner, tmp_path: Path) -> None:
    settings = _catalog(tmp_path)

    async def scenario(gw: Gw) -> None:
        runs = f"{APP}/scripts/count/executions"
        body = await gw.error("POST", runs, 400, json={"execution_type": "now",
                                                       "parameters": {"count": 0}})
        assert body["error_code"] == "invalid-parameter"
        assert body["parameters"]["details"][0].startswith("count:")
        body = await gw.error("POST", runs, 400, json={"execution_type": "now"})
        assert body["error_code"] == "invalid-parameter"
        hello = f"{APP}/scripts/hello/executions"
        body = await gw.error("POST", hello, 400, json={})
        assert body["error_code"] == "invalid-parameter"
        body = await gw.error("POST", hello, 400, json={"execution_type": "on_restart"})
        assert body["error_code"] == "invalid-parameter" and "plugin" in body["message"]
        for script in ("count", "hello"):
            status, body = await gw.json("GET", f"{APP}/scripts/{script}/executions")
            assert body["items"] == []  # nothing ran

    gateway(scenario, settings=settings)


def test_script_upload_errors_write_nothing(gateway: Runner, tmp_path: Path) -> None:
    settings = _catalog(tmp_path)

    async def scenario(gw: Gw) -> None:
        big = aiohttp.FormData()
        big.add_field("file", io.BytesIO(b"#" * (1024 * 1024 + 10)), filename="big.sh")
        body = await gw.error("POST", f"{APP}/scripts", 413, data=big)
        assert body["vendor_code"] == script_code(gw, "script-file-too-large")
        body = await gw.error("POST", f"{APP}/scripts", 400, data=_form("notes.txt", b"hi"))
        assert body["error_code"] == "invalid-parameter"
        assert ".sh, .bash or .py" in body["message"]
        form = _form("x.sh", b"true", metadata='{"parameters_schema": {"type": 5}}')
        body = await gw.error("POST", f"{APP}/scripts", 400, data=form)
        assert body["error_code"] == "invalid-parameter"
        assert not any(p.is_file() for p in (tmp_path / "uploads").rglob("*"))
        status, body = await gw.json("GET", f"{APP}/scripts")
        assert body[gw.xv]["total_count"] == 2

    gateway(scenario, settings=settings)


async def finished(gw: Gw, path: str) -> dict[str, Any]:
    """The execution once it is no longer running."""
    body: dict[str, Any] = {}
    for _ in range(1500):  # 30 s
        status, body = await gw.json("GET", path)
        assert status == 200, body
        if body["status"] not in ("prepared", "running"):
            return body
        await asyncio.sleep(0.02)
    raise AssertionError(f"the run did not finish: {body}")


def test_a_run_and_its_execution_routes(gateway: Runner, tmp_path: Path) -> None:
    settings = _catalog(tmp_path)

    async def scenario(gw: Gw) -> None:
        runs = f"{APP}/scripts/hello/executions"
        async with gw.client.post(runs, json={"execution_type": "now",
                                              "parameters": {"who": "ops"}}) as resp:
            assert resp.status == 202, await resp.text()
            started = await resp.json()
            path = resp.headers["Location"]
        assert path == f"{runs}/{started['id']}"
        body = await finished(gw, path)
        assert (body["status"], body["progress"]) == ("completed", 100)
        assert body["parameters"]["stdout"] == "hello ops on actuator\n"
        status, listing = await gw.json("GET", runs)
        assert [i["id"] for i in listing["items"]] == [started["id"]]
        body = await gw.error("PUT", path, 409, json={"action": "stop"})
        assert body["error_code"] == "vendor-error"
        body = await gw.error("PUT", path, 400, json={"action": "pause"})
        assert body["error_code"] == "invalid-parameter"
        for method in ("GET", "PUT", "DELETE"):
            body = await gw.error(method, f"{runs}/nope", 404, json={"action": "stop"})
            assert body["error_code"] == "resource-not-found"
        status, _ = await gw.json("DELETE", path)
        assert status == 204
        await gw.error("GET", path, 404)

    gateway(scenario, settings=settings)


def test_fan_out_header_and_the_default_category(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        header = {"spec": "X-Vendor-No-Fan-Out", "medkit": "X-Medkit-No-Fan-Out"}[gw.profile]
        status, _ = await gw.json("GET", f"{APP}/data", headers={header: "1"})
        assert status == 200
        status, body = await gw.json("GET", f"{APP}/bulk-data")
        assert body["items"] == ["rosbags"]
        await gw.error("POST", "/api/v1/functions/chassis/bulk-data/uploads", 405, data=b"x")

    gateway(scenario)


def test_script_run_codes(gateway: Runner, tmp_path: Path) -> None:
    scripts_dir = Path(_scripts_dir(tmp_path))
    (scripts_dir / "slow.sh").write_text("echo slow\nsleep 60\n")
    (scripts_dir / "hello.sh").write_text("echo hello\n")
    settings = (*_scripts(str(scripts_dir)), "scripts.max_concurrent_executions=1")
    codes = {"spec": {"running": "script-running", "not-running": "script-not-running",
                      "limit": "script-concurrency-limit"},
             "medkit": {"running": "x-medkit-script-running",
                        "not-running": "x-medkit-script-not-running",
                        "limit": "x-medkit-concurrency-limit"}}

    async def scenario(gw: Gw) -> None:
        code = codes[gw.profile]
        now = {"execution_type": "now"}
        async with gw.client.post(f"{APP}/scripts/slow/executions", json=now) as resp:
            assert resp.status == 202, await resp.text()
            location = resp.headers["Location"]
        try:
            body = await gw.error("POST", f"{APP}/scripts/hello/executions", 429, json=now)
            assert (body["error_code"], body["vendor_code"]) == ("vendor-error", code["limit"])
            body = await gw.error("DELETE", location, 409)
            assert body["vendor_code"] == code["running"]
        finally:
            status, _ = await gw.json("PUT", location, json={"action": "forced_termination"})
            assert status in (200, 202)
        body = await finished(gw, location)
        assert body["status"] == "terminated"
        body = await gw.error("PUT", location, 409, json={"action": "stop"})
        assert body["vendor_code"] == code["not-running"]
        status, _ = await gw.json("DELETE", location)
        assert status == 204

    gateway(scenario, settings=settings)
