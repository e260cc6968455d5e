"""Bulk data and scripts in process (the bulk-data and scripts handlers):
categories, uploads and their errors; script uploads, lookups and the 501 of an
unconfigured backend."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from tests.inproc.inproc_gateway import Gw, Runner

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
