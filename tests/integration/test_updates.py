"""Software updates through the first-party update provider plugin, on a real gateway: the
full cycle with a post-install script, and the rollback when it fails (pruning and the
archive checks: tests/updates/test_inproc_update_provider.py)."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.integration.test_bulk_data import upload

pytestmark = pytest.mark.integration

POST_INSTALL = b"#!/bin/sh\necho \"$UPDATE_ID\" > \"$RELEASE_DIR/installed_by\"\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("updates")


@pytest.fixture(scope="module")
def gw(domain: int, root: Path) -> Iterator[Gateway]:
    settings = ["plugins=[update_provider]", f"state_dir={root / 'state'}",
                f"plugins.update_provider.install_root={root / 'installed'}",
                f"plugins.update_provider.package_dirs=[{root}]",
                "plugins.update_provider.max_expansion_ratio=50",
                f"plugins.update_provider.max_unpacked_bytes={4 << 20}",
                "bulk_data.categories=[packages]"]
    with Gateway(free_port(), domain, settings, root / "gateway.log") as g:
        yield g


def package(version: str, script: bool = True) -> bytes:
    """A tar.gz with app/version.txt and (optionally) post_install.sh."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        files = {"app/version.txt": version.encode()}
        if script:
            files["post_install.sh"] = POST_INSTALL
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def status(gw: Gateway, uid: str, done: Any, timeout: float = 30.0) -> dict[str, Any]:
    """Poll the status until done(body) holds."""
    return gw.wait_for(f"/updates/{uid}/status", done, timeout)  # type: ignore[no-any-return]


def test_full_cycle_swaps_the_good_package_in(gw: Gateway, root: Path) -> None:
    host = gw.get("/components").json()["items"][0]["id"]
    v1 = package("1.0")
    up = upload(gw, f"/components/{host}/bulk-data/packages",
                ("file", "app-1.0.tar.gz", "application/gzip", v1))
    assert up.status == 201, up
    reg = {"id": "app_v1", "update_name": "app", "automated": True,
           "package": {"bulk_data": f"packages/{up.json()['id']}", "sha256": sha(v1),
                       "install_as": "app", "post_install": "post_install.sh"}}
    assert gw.request("POST", "/updates", reg).status == 201
    assert gw.request("PUT", "/updates/app_v1/automated").status == 202
    body = status(gw, "app_v1", lambda b: b["status"] in ("completed", "failed")
                  and b["x-vendor"]["phase"] in ("executed", "failed"))
    assert body["status"] == "completed" and body["x-vendor"]["phase"] == "executed", body
    assert body["progress"] == 100
    link = root / "installed" / "app"
    assert link.is_symlink() and (link / "app" / "version.txt").read_text() == "1.0"
    assert (link / "installed_by").read_text().strip() == "app_v1"  # post-install ran

    # version 2, named by path: prepare and execute as two steps
    v2 = package("2.0", script=False)
    (root / "app-2.0.tar.gz").write_bytes(v2)
    reg2 = {"id": "app_v2", "update_name": "app",
            "package": {"path": str(root / "app-2.0.tar.gz"), "sha256": sha(v2),
                        "install_as": "app"}}
    assert gw.request("POST", "/updates", reg2).status == 201
    assert gw.request("PUT", "/updates/app_v2/prepare").status == 202
    body = status(gw, "app_v2", lambda b: b["x-vendor"]["phase"] in ("prepared", "failed"))
    assert body["status"] == "completed" and body["x-vendor"]["phase"] == "prepared", body
    assert (link / "app" / "version.txt").read_text() == "1.0"  # not swapped yet
    assert gw.request("PUT", "/updates/app_v2/execute").status == 202
    body = status(gw, "app_v2", lambda b: b["x-vendor"]["phase"] in ("executed", "failed"))
    assert body["x-vendor"]["phase"] == "executed", body
    assert (link / "app" / "version.txt").read_text() == "2.0"
    assert os.readlink(link) != str(root / "installed" / ".releases")

    # delete: 204, then unknown
    assert gw.request("DELETE", "/updates/app_v1").status == 204
    assert_error(gw.get("/updates/app_v1"), 404, "vendor-error", "x-vendor-update-not-found")
    assert_error(gw.get("/updates/app_v1/status"), 404)
    assert gw.get("/updates").json()["items"] == ["app_v2"]


def test_failing_post_install_rolls_back(gw: Gateway, root: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in {"app/version.txt": b"3.0", "post_install.sh": b"exit 3\n"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    (root / "app-3.0.tar.gz").write_bytes(data)
    reg = {"id": "app_v3", "package": {"path": str(root / "app-3.0.tar.gz"), "sha256": sha(data),
                                       "install_as": "app", "post_install": "post_install.sh"}}
    assert gw.request("POST", "/updates", reg).status == 201
    assert gw.request("PUT", "/updates/app_v3/automated").status == 202
    body = status(gw, "app_v3", lambda b: b["status"] == "failed")
    assert "exited with 3" in body["error"]["message"]
    link = root / "installed" / "app"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not link.exists():
        time.sleep(0.05)
    assert (link / "app" / "version.txt").read_text() == "2.0"  # the previous tree is back
    releases = root / "installed" / ".releases"
    assert not [p for p in releases.rglob("*") if "app_v3" in p.name]  # failed release removed


def run(gw: Gateway, uid: str, op: str = "automated") -> dict[str, Any]:
    """Start `op` on an update; its status once it ended (test_updates_security.py too)."""
    assert gw.request("PUT", f"/updates/{uid}/{op}").status == 202
    final = ("executed", "failed") if op != "prepare" else ("prepared", "failed")
    return status(gw, uid, lambda b: b["x-vendor"]["phase"] in final and b["status"] in (
        "completed", "failed"))
