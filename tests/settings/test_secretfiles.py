"""Secrets from files, blanked in /proc/<pid>/cmdline and environ, and kept from children."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.scripts import childenv
from gateway.settings.config import ConfigError, load

SECRET = "file-held-jwt-secret-0123456789abcdef"


def test_secret_settings_come_from_files(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                         ) -> None:
    jwt = tmp_path / "jwt"
    jwt.write_text(SECRET + "\n")
    jwt.chmod(0o600)
    clients = tmp_path / "clients"
    clients.write_text("a:secret-of-client-a:viewer\n\nb:secret-of-client-b:admin\n")
    clients.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        s = load(None, [f"auth.jwt_secret_file={jwt}", f"auth.clients_file={clients}"])
    assert s["auth.jwt_secret"] == SECRET
    assert s["auth.clients"] == ("a:secret-of-client-a:viewer", "b:secret-of-client-b:admin")
    assert "readable by others" in caplog.text and str(clients) in caplog.text
    assert str(jwt) not in caplog.text
    assert s.as_dict()["auth.jwt_secret"] == "***"
    with pytest.raises(ConfigError, match="setting 'auth.jwt_secret_file': cannot read"):
        load(None, [f"auth.jwt_secret_file={tmp_path / 'missing'}"])


def test_children_never_get_a_registered_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.ros.dds import isolation

    # the user's environment as of now (a cli.main run earlier in this process kept its own)
    monkeypatch.setattr(isolation, "_USER_ENV", None)
    load(None, [f"aggregation.peer_auth_header=Bearer {SECRET}"])
    monkeypatch.setenv("PLAIN_NAME", f"x{SECRET}x")
    monkeypatch.setenv("SERVICE_TOKEN", "anything")
    monkeypatch.setenv("KEEP_ME", "1")
    env = childenv.child_environment()
    assert env["KEEP_ME"] == "1"
    assert "PLAIN_NAME" not in env and "SERVICE_TOKEN" not in env
    assert not any(SECRET in v for v in env.values())


CHILD = """
import sys, time
from gateway.settings.secretfiles import scrub_process
n = scrub_process([sys.argv[1]])
print(n, flush=True)
sys.stdin.readline()
"""


def test_a_secret_on_the_command_line_leaves_proc(tmp_path: Path) -> None:
    env = dict(os.environ, HARMLESS_LOOKING=SECRET)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, SECRET], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        blanked = int(proc.stdout.readline())
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes()
    finally:
        proc.communicate(b"\n", timeout=30)
    assert blanked >= 2  # one in the arguments, one in the environment
    assert SECRET.encode() not in cmdline and SECRET.encode() not in environ
    assert b"*" * len(SECRET) in cmdline and b"HARMLESS_LOOKING=" + b"*" * len(SECRET) in environ


INSPECTED = """
import sys
from gateway.settings.secretfiles import forbid_inspection
print(forbid_inspection() if sys.argv[1] == "on" else "off", flush=True)
sys.stdin.readline()
"""


@pytest.mark.parametrize("mode", ["on", "off"])
def test_the_same_user_cannot_read_a_protected_process(mode: str) -> None:
    import pwd
    import shutil

    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("needs root, useradd and setpriv")
    try:
        pwd.getpwnam("diagscript")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "diagscript"], check=True)
    user = pwd.getpwnam("diagscript")
    as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    root = Path(__file__).resolve().parents[2]
    probe = subprocess.run([*as_user, sys.executable, "-c", "import gateway.settings.secretfiles"],
                           cwd=root, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the checkout or its venv is not readable by another user here")
    proc = subprocess.Popen([*as_user, sys.executable, "-c", INSPECTED, mode], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == (b"True" if mode == "on" else b"off")
        peek = subprocess.run([*as_user, "cat", f"/proc/{proc.pid}/environ"],
                              capture_output=True)
    finally:
        proc.communicate(b"\n", timeout=30)
    assert (peek.returncode != 0) == (mode == "on"), peek
