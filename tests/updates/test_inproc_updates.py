"""Software updates in process (the updates handlers): 501 without a provider; over the
first-party update provider plugin, registration, status, prepare and execute of a package,
and the errors."""

from __future__ import annotations

import asyncio
import hashlib
import io
import tarfile
from pathlib import Path
from typing import Any

from tests.inproc.inproc_gateway import Gw, Runner

UPD = "/api/v1/updates"


def _settings(root: Path) -> tuple[str, ...]:
    return ("plugins=[update_provider]",
            f"plugins.update_provider.install_root={root / 'installed'}",
            f"plugins.update_provider.package_dirs=[{root}]",
            "plugins.update_provider.max_expansion_ratio=50",
            f"plugins.update_provider.max_unpacked_bytes={4 << 20}")


def package(version: str) -> bytes:
    """A tar.gz holding app/version.txt."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = version.encode()
        info = tarfile.TarInfo("app/version.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def phase(gw: Gw, uid: str, until: tuple[str, ...]) -> dict[str, Any]:
    """The update's status once its phase is one of `until`."""
    body: dict[str, Any] = {}
    for _ in range(500):
        status, body = await gw.json("GET", f"{UPD}/{uid}/status")
        assert status == 200, body
        if body[gw.xv]["phase"] in until:
            return body
        await asyncio.sleep(0.02)
    raise AssertionError(f"update {uid} stayed in {body}")


def test_register_and_look_up(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", "/api/v1/")
        assert body["capabilities"]["updates"] is True
        status, body = await gw.json("GET", UPD)
        assert (status, body) == (200, {"items": []})
        reg = {"id": "bad_sum", "update_name": "broken", "automated": False,
               "origins": ["remote"],
               "package": {"path": str(tmp_path / "nope.tar.gz"), "sha256": "0" * 64}}
        async with gw.client.post(UPD, json=reg) as resp:
            assert resp.status == 201 and await resp.json() == {"id": "bad_sum"}
            assert resp.headers["Location"] == f"{UPD}/bad_sum"
        status, body = await gw.json("GET", f"{UPD}/bad_sum")
        assert (status, body) == (200, reg)  # stored as given
        status, body = await gw.json("GET", f"{UPD}/bad_sum/status")
        assert body == {"status": "pending", gw.xv: {"phase": "none"}}
        status, body = await gw.json("GET", f"{UPD}?origin=remote")
        assert body == {"items": ["bad_sum"]}
        status, body = await gw.json("GET", f"{UPD}?origin=proximity")
        assert body == {"items": []}

    gateway(scenario, settings=_settings(tmp_path))


def test_update_errors(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        reg = {"id": "u1", "automated": False,
               "package": {"path": str(tmp_path / "x.tar.gz"), "sha256": "0" * 64}}
        status, _ = await gw.json("POST", UPD, json=reg)
        assert status == 201
        body = await gw.error("POST", UPD, 400, json=reg)
        assert (body["error_code"], body["vendor_code"]) == (
            "vendor-error", f"{gw.xv}-update-already-exists")
        body = await gw.error("POST", UPD, 400, json={"id": "a:b"})
        assert body["error_code"] == "invalid-request"
        body = await gw.error("POST", UPD, 400, json={"id": "badpkg", "package": "x"})
        assert body["error_code"] == "invalid-request"
        body = await gw.error("GET", f"{UPD}/ghost", 404)
        assert body["vendor_code"] == f"{gw.xv}-update-not-found"
        await gw.error("GET", f"{UPD}/ghost/status", 404)
        await gw.error("PUT", f"{UPD}/ghost/prepare", 404)
        body = await gw.error("PUT", f"{UPD}/u1/execute", 400)
        assert body["vendor_code"] == f"{gw.xv}-update-not-prepared"
        body = await gw.error("PUT", f"{UPD}/u1/automated", 400)
        assert body["vendor_code"] == f"{gw.xv}-update-not-automated"

    gateway(scenario, settings=_settings(tmp_path))


def test_prepare_checks_the_checksum(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        data = package("9.9")
        (tmp_path / "tampered.tar.gz").write_bytes(data)
        reg = {"id": "tampered", "update_name": "app",
               "package": {"path": str(tmp_path / "tampered.tar.gz"),
                           "sha256": sha(data + b"x"), "install_as": "app"}}
        status, _ = await gw.json("POST", UPD, json=reg)
        assert status == 201
        async with gw.client.put(f"{UPD}/tampered/prepare") as resp:
            assert resp.status == 202
            assert resp.headers["Location"] == f"{UPD}/tampered/status"
        body = await phase(gw, "tampered", ("failed",))
        assert body["status"] == "failed"
        assert "SHA-256 mismatch" in body["error"]["message"]
        assert not (tmp_path / "installed" / "app").exists()
        body = await gw.error("PUT", f"{UPD}/tampered/execute", 400)
        assert body["vendor_code"] == f"{gw.xv}-update-not-prepared"

    gateway(scenario, settings=_settings(tmp_path))


def test_prepare_then_execute_installs_the_package(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        data = package("2.0")
        (tmp_path / "app-2.0.tar.gz").write_bytes(data)
        reg = {"id": "app_v2", "update_name": "app",
               "package": {"path": str(tmp_path / "app-2.0.tar.gz"), "sha256": sha(data),
                           "install_as": "app"}}
        status, _ = await gw.json("POST", UPD, json=reg)
        assert status == 201
        status, _ = await gw.json("PUT", f"{UPD}/app_v2/prepare")
        assert status == 202
        body = await phase(gw, "app_v2", ("prepared", "failed"))
        assert (body["status"], body[gw.xv]["phase"]) == ("completed", "prepared"), body
        link = tmp_path / "installed" / "app"
        assert not link.exists()  # not swapped in yet
        status, _ = await gw.json("PUT", f"{UPD}/app_v2/execute")
        assert status == 202
        body = await phase(gw, "app_v2", ("executed", "failed"))
        assert body[gw.xv]["phase"] == "executed", body
        assert (link / "app" / "version.txt").read_text() == "2.0"
        status, _ = await gw.json("DELETE", f"{UPD}/app_v2")
        assert status == 204
        await gw.error("GET", f"{UPD}/app_v2", 404)

    gateway(scenario, settings=_settings(tmp_path))


def test_updates_without_a_provider(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for method, path in (("GET", UPD), ("POST", UPD),
                             ("GET", f"{UPD}/u1"),
                             ("PUT", f"{UPD}/u1/prepare"),
                             ("GET", f"{UPD}/u1/status")):
            body = await gw.error(method, path, 501, json={})
            assert body["error_code"] == "not-implemented"
            assert body["message"] == "Software updates backend not configured"
            assert body["parameters"]["feature"] == "updates"
        status, body = await gw.json("GET", "/api/v1/")
        assert body["capabilities"]["updates"] is False

    gateway(scenario)


def test_a_spec_registration_body_is_accepted_and_declared(gateway: Runner,
                                                           tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        reg = {"id": "spec_body", "update_name": "Navigation 2.1", "automated": True,
               "origins": ["remote", "proximity"], "duration": 120, "size": 1048576,
               "updated_components": ["nav"], "affected_components": ["nav", "base"]}
        status, body = await gw.json("POST", UPD, json=reg)
        assert (status, body) == (201, {"id": "spec_body"})
        status, body = await gw.json("GET", f"{UPD}/spec_body")
        assert (status, body) == (200, reg)
        status, _ = await gw.json("PUT", f"{UPD}/spec_body/automated")
        assert status == 202
        body = await phase(gw, "spec_body", ("executed", "failed"))
        assert (body["status"], body[gw.xv]["phase"]) == ("completed", "executed"), body
        body = await gw.error("POST", UPD, 400, json={"id": "typed", "automated": "yes"})
        assert body["error_code"] == "invalid-request" and "'automated'" in body["message"]
        status, doc = await gw.json("GET", "/api/v1/docs")
        schema = doc["components"]["schemas"]["UpdateRegistration"]
        for field in ("id", "update_name", "automated", "origins", "duration", "size",
                      "updated_components", "affected_components", "package"):
            assert field in schema["properties"], field
        assert schema["required"] == ["id"]

    gateway(scenario, settings=_settings(tmp_path))


def test_registration_refusals_name_the_reason(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        data = package("1.0")
        (tmp_path / "ok.tar.gz").write_bytes(data)
        good = {"path": str(tmp_path / "ok.tar.gz"), "sha256": sha(data)}
        for hook in ("/bin/sh", "../../outside.sh", "bin/../../x.sh"):
            body = await gw.error("POST", UPD, 400, json={
                "id": "hooked", "package": {**good, "post_install": hook}})
            assert body["error_code"] == "invalid-request"
            assert "post_install" in body["message"] and "inside the package" in body["message"]
        body = await gw.error("POST", UPD, 400, json={
            "id": "elsewhere", "package": {"path": "/etc/hostname", "sha256": "0" * 64}})
        assert body["error_code"] == "invalid-request" and "package_dirs" in body["message"]
        await gw.error("GET", f"{UPD}/hooked", 404)
        status, body = await gw.json("GET", UPD)
        assert body == {"items": []}

    gateway(scenario, settings=_settings(tmp_path))


def test_an_unknown_update_is_named(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", UPD)
        assert (status, body["items"]) == (200, [])
        body = await gw.error("GET", f"{UPD}/ghost/status", 404)
        assert (body["error_code"], body["vendor_code"]) == ("vendor-error",
                                                             f"{gw.xv}-update-not-found")
        assert body["parameters"]["update_id"] == "ghost"

    gateway(scenario, settings=_settings(tmp_path))
