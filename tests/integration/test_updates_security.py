"""Update provider defaults that protect the robot: no package paths until configured, and a
post-install script that sees no secret and whose output shows none."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.integration.test_bulk_data import upload
from tests.integration.test_updates import run, sha

pytestmark = pytest.mark.integration

JWT_SECRET = "updates-hook-test-secret-0123456789abcdef"
ENV_SECRET = "robot-api-key-value-9f8e7d6c"
HOOK = b"""#!/bin/sh
echo "key=${ROBOT_API_KEY:-unset}"
echo "jwt=$(cat secret.txt)"
exit 1
"""


@pytest.fixture(scope="module")
def gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    root = tmp_path_factory.mktemp("updates_security")
    settings = ["plugins=[update_provider]", f"state_dir={root / 'state'}",
                "bulk_data.categories=[packages]", f"auth.jwt_secret={JWT_SECRET}"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROBOT_API_KEY", ENV_SECRET)  # in the gateway's environment
        gateway = Gateway(free_port(), domain, settings, root / "gateway.log")
        gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


def test_package_paths_are_refused_while_package_dirs_is_empty(gw: Gateway,
                                                               tmp_path: Path) -> None:
    data = b"payload"
    (tmp_path / "pkg.bin").write_bytes(data)
    err = assert_error(gw.request("POST", "/updates", {
        "id": "by_path", "package": {"path": str(tmp_path / "pkg.bin"), "sha256": sha(data)}}),
        400, "invalid-request")
    assert "package_dirs" in err["message"] and "empty" in err["message"], err
    assert_error(gw.get("/updates/by_path"), 404)


def test_post_install_sees_no_secret_and_shows_none(gw: Gateway) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in {"post_install.sh": HOOK, "secret.txt": JWT_SECRET.encode()}.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(content))
    data = buf.getvalue()
    host = gw.get("/components").json()["items"][0]["id"]
    up = upload(gw, f"/components/{host}/bulk-data/packages",
                ("file", "hook.tar.gz", "application/gzip", data))
    assert up.status == 201, up
    reg = {"id": "hooked", "package": {"bulk_data": f"packages/{up.json()['id']}",
                                       "sha256": sha(data), "post_install": "post_install.sh"}}
    assert gw.request("POST", "/updates", reg).status == 201
    body = run(gw, "hooked")
    assert body["status"] == "failed", body
    message = body["error"]["message"]
    assert "key=unset" in message, message  # the variable was not handed to the script
    assert "jwt=[redacted]" in message, message  # a secret it printed is not shown
    assert ENV_SECRET not in message and JWT_SECRET not in message
