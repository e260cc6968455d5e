"""The first-party update provider in process: releases of other install names survive pruning,
the expansion caps refuse archive bombs, and a package with a link leaving it is refused by
the member's name; nothing is left staged."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.inproc.inproc_gateway import Gw, Runner

UPD = "/api/v1/updates"


def settings(root: Path) -> tuple[str, ...]:
    return ("plugins=[update_provider]",
            f"plugins.update_provider.install_root={root / 'installed'}",
            f"plugins.update_provider.package_dirs=[{root}]",
            "plugins.update_provider.max_expansion_ratio=50",
            f"plugins.update_provider.max_unpacked_bytes={4 << 20}")


def tar_bytes(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    """A tar.gz of (header, data) pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buf.getvalue()


def file_member(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def link_member(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, b""


def package(version: str) -> bytes:
    return tar_bytes([file_member("app/version.txt", version.encode())])


async def register(gw: Gw, root: Path, uid: str, data: bytes, **pkg: Any) -> None:
    path = root / f"{uid}.pkg"
    path.write_bytes(data)
    status, body = await gw.json("POST", UPD, json={"id": uid, "package": {
        "path": str(path), "sha256": hashlib.sha256(data).hexdigest(), **pkg}})
    assert status == 201, body


async def run(gw: Gw, uid: str, op: str = "automated") -> dict[str, Any]:
    """Start `op`; the status once it ended."""
    status, body = await gw.json("PUT", f"{UPD}/{uid}/{op}")
    assert status == 202, body
    final = ("prepared", "failed") if op == "prepare" else ("executed", "failed")
    for _ in range(1500):
        status, body = await gw.json("GET", f"{UPD}/{uid}/status")
        assert status == 200, body
        if body[gw.xv]["phase"] in final and body["status"] in ("completed", "failed"):
            return dict(body)
        await asyncio.sleep(0.02)
    raise AssertionError(f"update {uid} did not end: {body}")


def staging(gw: Gw) -> Path:
    """The provider's staging directory (made at start, below the state directory)."""
    path = Path(gw.state.settings["state_dir"]) / "updates" / "staging"
    assert path.is_dir(), path
    return path


def test_pruning_keeps_every_other_install_name(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        await register(gw, tmp_path, "navx_1", package("x1"), install_as="nav-x")
        assert (await run(gw, "navx_1"))[gw.xv]["phase"] == "executed"
        for n in (1, 2, 3):
            await register(gw, tmp_path, f"nav_{n}", package(str(n)), install_as="nav")
            assert (await run(gw, f"nav_{n}"))[gw.xv]["phase"] == "executed"
        installed = tmp_path / "installed"
        assert (installed / "nav" / "app" / "version.txt").read_text() == "3"
        assert (installed / "nav-x" / "app" / "version.txt").read_text() == "x1"  # untouched
        assert len(list((installed / ".releases" / "nav").iterdir())) == 2  # live + previous

    gateway(scenario, settings=settings(tmp_path))


def test_expansion_caps_refuse_archive_bombs(gateway: Runner, tmp_path: Path) -> None:
    async def scenario(gw: Gw) -> None:
        bomb = tar_bytes([file_member("zeros.bin", bytes(3 << 20))])  # 3 MiB of zeros, ~3 KiB
        await register(gw, tmp_path, "bomb", bomb)
        body = await run(gw, "bomb", "prepare")
        assert body["status"] == "failed", body
        assert "max_expansion_ratio" in body["error"]["message"], body
        assert not (staging(gw) / "bomb").exists()
        big = tar_bytes([file_member("noise.bin", os.urandom(5 << 20))])  # incompressible
        await register(gw, tmp_path, "too_big", big)
        body = await run(gw, "too_big", "prepare")
        assert body["status"] == "failed", body
        assert "max_unpacked_bytes" in body["error"]["message"], body
        assert not (staging(gw) / "too_big").exists()

    gateway(scenario, settings=settings(tmp_path))


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../etc/passwd"])
def test_linked_archives_are_refused_by_name(gateway: Runner, tmp_path: Path,
                                             target: str) -> None:
    async def scenario(gw: Gw) -> None:
        uid = "linked"
        data = tar_bytes([file_member("app/version.txt", b"1"),
                          link_member("app/passwd", target)])
        await register(gw, tmp_path, uid, data)
        body = await run(gw, uid, "prepare")
        assert body["status"] == "failed", body
        message = body["error"]["message"]
        assert "app/passwd" in message and target in message
        assert "outside the package" in message
        assert "Plugin threw exception" not in message and "Traceback" not in message
        assert not (staging(gw) / uid).exists()

    gateway(scenario, settings=settings(tmp_path))
