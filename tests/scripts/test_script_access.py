"""Scripts safe by default: uploads readable by the run user only; root runs need consent."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gateway.scripts.catalog import (
    ROOT_WARNING,
    Script,
    ScriptError,
    UploadStore,
    command,
    grant,
    root_refusal,
    upload_access,
)
from gateway.settings.config import ConfigError, load

ROOT = Path(__file__).resolve().parents[2]
CHILD_BUDGET_S = 120.0
RUN_USER = "nobody"
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown, setpriv)")


def test_upload_access_is_private_or_read_only_for_the_run_group() -> None:
    assert upload_access(None) == (0o700, 0o600, None)
    dir_mode, file_mode, group = upload_access(4321)
    assert (dir_mode, file_mode, group) == (0o750, 0o640, 4321)
    for mode in (dir_mode, file_mode):
        assert not mode & (stat.S_IWGRP | stat.S_IRWXO)  # the group never writes, others nothing


def test_run_as_another_user_opens_the_script_from_its_folder(tmp_path: Path) -> None:
    sc = Script("s", "s", tmp_path / "u" / "script.sh", "sh", managed=False)
    assert command(sc, {}, relative=True) == ["sh", "./script.sh"]
    assert command(sc, {}) == ["sh", str(tmp_path / "u" / "script.sh")]


@pytest.mark.parametrize("euid, user, allow, refused", [
    (0, "", False, True), (0, "", True, False), (0, "nobody", False, False),
    (1000, "", False, False)])
def test_root_refusal(euid: int, user: str, allow: bool, refused: bool) -> None:
    why = root_refusal(True, euid, user, allow)
    assert (why is not None) == refused
    if why:
        assert "scripts.run_as_user" in why and "scripts.allow_root" in why
    assert root_refusal(False, 0, "", False) is None  # scripts off: nothing to refuse


@as_root
def test_a_root_gateway_with_scripts_refuses_to_start_without_consent(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gateway.app import make_app

    base = [f"state_dir={tmp_path}", f"scripts.scripts_dir={tmp_path}"]
    with pytest.raises(ConfigError, match=r"scripts\.run_as_user.*scripts\.allow_root=true"):
        make_app(load(None, base))
    make_app(load(None, [*base, f"scripts.run_as_user={RUN_USER}"]))
    assert ROOT_WARNING not in caplog.messages
    make_app(load(None, [*base, "scripts.allow_root=true"]))  # consent given: starts, warns
    assert caplog.messages.count(ROOT_WARNING) == 1


@as_root
def test_grant_gives_the_group_read_access_and_keeps_the_owner(tmp_path: Path) -> None:
    gid = pwd.getpwnam(RUN_USER).pw_gid
    store = UploadStore(tmp_path / "up", run_gid=gid)
    old = os.umask(0o077)  # the gateway's private umask (process/statefiles.py)
    try:
        sc = store.save("apps", "a1", "x.sh", b"echo hi\n", {})
    finally:
        os.umask(old)
    for path, mode in ((sc.path.parent, 0o750), (sc.path, 0o640)):
        st = path.stat()
        assert (stat.S_IMODE(st.st_mode), st.st_gid, st.st_uid) == (mode, gid, 0), path
    assert stat.S_IMODE((sc.path.parent / "meta.json").stat().st_mode) == 0o600
    os.chmod(sc.path, 0o600)  # what a restart's tightening of the state directory does
    grant(sc, gid)
    assert stat.S_IMODE(sc.path.stat().st_mode) == 0o640
    sc.path.unlink()
    sc.path.symlink_to("/etc/shadow")
    with pytest.raises(ScriptError, match="symbolic link"):
        grant(sc, gid)


def run_as_user_scenario(tmp: str) -> dict[str, Any]:
    """Upload a script to an in-process gateway whose scripts run as RUN_USER (state
    directory 0700, as a started gateway makes it) and run it; the execution's body."""
    from aiohttp import FormData
    from aiohttp.test_utils import TestClient, TestServer

    from gateway.process.statefiles import private_by_default
    from tests.schemacheck.test_schema_patterns import _app

    private_by_default(tmp)
    app = _app(tmp, f"scripts.run_as_user={RUN_USER}")

    async def go() -> dict[str, Any]:
        async with TestClient(TestServer(app)) as client:
            form = FormData()
            form.add_field("file", b"id -u\ncat /etc/hostname >/dev/null && echo READ\n",
                           filename="who.sh")
            up = await client.post("/api/v1/components/host/scripts", data=form)
            assert up.status == 201, await up.text()
            sid = (await up.json())["id"]
            run = await client.post(f"/api/v1/components/host/scripts/{sid}/executions",
                                    json={"execution_type": "now"})
            assert run.status == 202, await run.text()
            where = run.headers["Location"]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                body: dict[str, Any] = await (await client.get(where)).json()
                if body["status"] not in ("prepared", "running"):
                    return body
                await asyncio.sleep(0.05)
            return body

    return asyncio.run(go())


@as_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_an_uploaded_script_runs_as_the_run_user(tmp_path: Path) -> None:
    code = ("import json; from tests.scripts.test_script_access import run_as_user_scenario; "
            f"print(json.dumps(run_as_user_scenario({str(tmp_path / 'state')!r})))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=CHILD_BUDGET_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    body = json.loads(done.stdout.strip().splitlines()[-1])
    uid = pwd.getpwnam(RUN_USER).pw_uid
    assert body["status"] == "completed", body
    assert body["parameters"]["stdout"] == f"{uid}\nREAD\n", body
