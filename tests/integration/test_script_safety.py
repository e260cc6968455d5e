"""Scripts that try to escape, on real gateways: schemas that would fetch, anonymous code,
descendants that hold the pipes or leave the session, a gateway killed under its runs, and a
script that reads the gateway's /proc files for its secrets."""

from __future__ import annotations

import base64
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error
from tests.integration.test_bulk_data import multipart

pytestmark = pytest.mark.integration

ROBOT_NODES = ("calibration",)
APP = "/apps/calibration"
JWT_SECRET = "jwt-secret-for-the-script-safety-tests-0123456789"
CLIENT_SECRET = "operator-client-secret-5150"
PEER_SECRET = "Bearer peer-credential-for-safety-8888"
CLIENTS = [f"op:{CLIENT_SECRET}:configurator"]
SCRIPT_USER = "diagscript"

SCRIPTS = {
    # a child holding stdout, then the script exits
    "holder.sh": "sleep 1000 &\necho child=$!\nexit 0\n",
    # a child in its own session, and a script that ignores SIGTERM and hangs
    "escaper.sh": "trap 'echo got TERM' TERM\nsetsid sleep 1000 &\necho child=$!\n"
                  "while true; do sleep 0.1; done\n",
    # the gateway's /proc files as the script sees them
    "peek.sh": 'echo "ppid=$PPID"\nfor f in environ cmdline; do\n'
               '  for p in $PPID $PARAM_GW_PID; do\n'
               '    echo "== $p $f $(base64 -w0 < /proc/$p/$f 2>/dev/null || echo DENIED)"\n'
               "  done\ndone\n",
    "whoami.sh": 'id -u\nif cat /proc/$PPID/environ >/dev/null 2>&1; then echo READ; '
                 "else echo DENIED; fi\n",
    "remote.sh": "true\n",
}
SIDECARS = {"remote.json": {"parameters_schema": {"$ref": "http://127.0.0.1:9/x.json"}}}


class Recorder(BaseHTTPRequestHandler):
    """Serves a schema slowly and counts who asked."""

    hits: list[str] = []

    def do_GET(self) -> None:  # http.server's name
        Recorder.hits.append(self.path)
        time.sleep(3)
        body = json.dumps({"type": "object"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def schema_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _scripts_dir() -> Path:
    """Managed scripts in a directory every user can read (pytest's own are root-only)."""
    folder = Path(tempfile.mkdtemp(prefix="diag-scripts-"))
    folder.chmod(0o755)
    for name, text in SCRIPTS.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o644)
    for name, meta in SIDECARS.items():
        (folder / name).write_text(json.dumps(meta))
    return folder


@pytest.fixture(scope="module")
def scripts_dir() -> Iterator[Path]:
    folder = _scripts_dir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _start(domain: int, tmp: Path, settings: list[str], env: dict[str, str] | None = None,
           port: int | None = None) -> Gateway:
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        g = Gateway(port or free_port(), domain, settings, tmp / "gateway.log").start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    g.wait_for("/apps", lambda b: "calibration" in {i["id"] for i in b["items"]}, timeout=30)
    return g


@pytest.fixture(scope="module")
def secure(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory,
           scripts_dir: Path) -> Iterator[Gateway]:
    """Auth on; the JWT secret on the command line and the peer credential in a file."""
    tmp = tmp_path_factory.mktemp("secure")
    peer_file = tmp / "peer"
    peer_file.write_text(PEER_SECRET + "\n")
    peer_file.chmod(0o600)
    settings = [f"state_dir={tmp}", f"scripts.scripts_dir={scripts_dir}",
                "scripts.allow_root=true", "scripts.max_concurrent_executions=5", "scripts.stop_grace_sec=1",
                "auth.enabled=true", f"auth.jwt_secret={JWT_SECRET}",
                "auth.clients=[" + ",".join(CLIENTS) + "]",
                f"aggregation.peer_auth_header_file={peer_file}"]
    # the secret also sits in the gateway's environment under a harmless-looking name
    g = _start(domain, tmp, settings, {"HARMLESS_LOOKING": JWT_SECRET})
    g.token = token(g)  # type: ignore[attr-defined]
    try:
        yield g
    finally:
        g.stop()


def token(g: Gateway) -> str:
    resp = g.request("POST", "/auth/authorize", body={
        "grant_type": "client_credentials", "client_id": "op", "client_secret": CLIENT_SECRET})
    assert resp.status == 200, resp
    return str(resp.json()["access_token"])


def call(g: Gateway, method: str, path: str, body: Any = None, **kw: Any) -> Response:
    headers = {"Authorization": f"Bearer {g.token}"}  # type: ignore[attr-defined]
    headers.update(kw.pop("headers", {}))
    return g.request(method, path, body, headers=headers, **kw)


def run(g: Gateway, script: str, **params: Any) -> str:
    body: dict[str, Any] = {"execution_type": "now"}
    if params:
        body["parameters"] = params
    resp = call(g, "POST", f"{APP}/scripts/{script}/executions", body)
    assert resp.status == 202, resp
    return resp.headers["location"][len("/api/v1"):]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def child_of(g: Gateway, path: str) -> int:
    body = g.wait_for(path, lambda b: "child=" in b["parameters"]["stdout"], timeout=20)
    return int(re.search(r"child=(\d+)", body["parameters"]["stdout"]).group(1))  # type: ignore[union-attr]


def until(predicate: Any, budget: float) -> None:
    deadline = time.monotonic() + budget
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def upload_schema(g: Gateway, schema: Any) -> Response:
    raw, ctype = multipart(("file", "s.sh", None, b"true\n"),
                           ("metadata", None, None, json.dumps(
                               {"parameters_schema": schema}).encode()))
    return call(g, "POST", f"{APP}/scripts", raw=raw, headers={"Content-Type": ctype})


# --- schemas never fetch -----------------------------------------------------------------------


def test_a_remote_ref_is_refused_and_never_fetched(secure: Gateway, schema_server: str) -> None:
    url = f"{schema_server}/schema.json"
    started = time.monotonic()
    for schema in ({"$ref": url}, {"type": "object", "properties": {"a": {"$ref": url}}}):
        body = assert_error(upload_schema(secure, schema), 400, "invalid-parameter")
        assert url in body["message"] and "not a local reference" in body["message"]
    assert time.monotonic() - started < 2.5  # answered without waiting on the 3 s server
    body = assert_error(upload_schema(secure, {"$ref": "file:///etc/passwd"}), 400,
                        "invalid-parameter")
    assert "file:///etc/passwd" in body["message"] and "root:" not in json.dumps(body)
    assert Recorder.hits == []  # the server never saw a request
    # a managed script whose sidecar schema points away is skipped, not fetched
    ids = {i["id"] for i in call(secure, "GET", f"{APP}/scripts").json()["items"]}
    assert "remote" not in ids and "holder" in ids
    assert secure.get("/health").status == 200


def test_a_local_ref_still_validates(secure: Gateway) -> None:
    schema = {"$defs": {"n": {"type": "integer", "minimum": 1}}, "type": "object",
              "properties": {"n": {"$ref": "#/$defs/n"}}, "required": ["n"]}
    resp = upload_schema(secure, schema)
    assert resp.status == 201, resp
    sid = resp.json()["id"]
    bad = call(secure, "POST", f"{APP}/scripts/{sid}/executions",
               {"execution_type": "now", "parameters": {"n": 0}})
    assert_error(bad, 400, "invalid-parameter")
    assert bad.json()["parameters"]["details"][0].startswith("n:")
    deep: Any = {"n": 1}
    for _ in range(40):
        deep = {"x": deep}
    resp = call(secure, "POST", f"{APP}/scripts/{sid}/executions",
                {"execution_type": "now", "parameters": deep})
    assert_error(resp, 400, "invalid-parameter")
    assert call(secure, "DELETE", f"{APP}/scripts/{sid}").status == 204


# --- a run always ends -------------------------------------------------------------------------


def test_a_child_holding_the_pipe_does_not_keep_the_run(secure: Gateway) -> None:
    for _ in range(6):  # more than the cap of 5: none answers 429
        path = run(secure, "holder")
        child = child_of(secure, path)
        body = secure.wait_for(path, lambda b: b["status"] != "running", timeout=20)
        assert body["status"] == "completed"
        assert body["x-vendor"]["ended_by"] == "exit"
        until(lambda c=child: not alive(c), 5)


def test_stop_and_kill_end_setsid_children(secure: Gateway) -> None:
    for action, ended_by in (("stop", "stop"), ("forced_termination", "forced_termination")):
        path = run(secure, "escaper")
        child = child_of(secure, path)
        assert call(secure, "PUT", path, {"action": action}).status == 202
        body = secure.wait_for(path, lambda b: b["status"] != "running", timeout=20)
        assert body["status"] == "terminated" and body["x-vendor"]["ended_by"] == ended_by
        until(lambda c=child: not alive(c), 5)


# --- secrets -----------------------------------------------------------------------------------


def test_a_script_cannot_read_the_gateways_secrets(secure: Gateway) -> None:
    assert secure.proc is not None
    pid = secure.proc.pid
    body = secure.wait_for(run(secure, "peek", gw_pid=str(pid)),
                           lambda b: b["status"] != "running", timeout=20)
    out = body["parameters"]["stdout"]
    assert f"ppid={pid}" in out  # the script's parent is the gateway itself
    assert out.count(f"== {pid} ") == 4  # environ and cmdline, via $PPID and by pid
    seen = b""
    for line in out.splitlines():
        if line.startswith("== "):
            _, _p, name, data = line.split(" ", 3)
            if data != "DENIED":
                seen += base64.b64decode(data)
    assert b"gateway" in seen and b"PATH=" in seen  # the files were read
    for secret in (JWT_SECRET, CLIENT_SECRET, PEER_SECRET):
        assert secret.encode() not in seen, secret
        assert secret not in out
    assert b"auth.jwt_secret=" + b"*" * len(JWT_SECRET) in seen  # blanked in place


def test_scripts_can_run_as_another_user(robot: Robot, domain: int, scripts_dir: Path,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd")
    try:
        pwd.getpwnam(SCRIPT_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SCRIPT_USER], check=True)
    uid = pwd.getpwnam(SCRIPT_USER).pw_uid
    tmp = tmp_path_factory.mktemp("user")
    g = _start(domain, tmp, [f"state_dir={tmp}", f"scripts.scripts_dir={scripts_dir}",
                             f"scripts.run_as_user={SCRIPT_USER}", "scripts.allow_anonymous=true"])
    try:
        path = g.request("POST", f"{APP}/scripts/whoami/executions",
                         {"execution_type": "now"}).headers["location"][len("/api/v1"):]
        body = g.wait_for(path, lambda b: b["status"] != "running", timeout=20)
        assert body["parameters"]["stdout"] == f"{uid}\nDENIED\n", body
    finally:
        g.stop()
    log = (tmp / "gateway.log").read_text()
    assert "scripts.allow_anonymous is on" in log and "WARNING" in log


# --- anonymous code ----------------------------------------------------------------------------


def test_auth_off_refuses_scripts_unless_allowed(robot: Robot, domain: int, scripts_dir: Path,
                                                 tmp_path_factory: pytest.TempPathFactory
                                                 ) -> None:
    tmp = tmp_path_factory.mktemp("anon")
    g = _start(domain, tmp, [f"state_dir={tmp}", f"scripts.scripts_dir={scripts_dir}",
                             "scripts.allow_root=true", "plugins=[test_plc]"])
    try:
        assert g.get(f"{APP}/scripts").status == 200  # reading stays open
        body = assert_error(g.request("POST", f"{APP}/scripts/holder/executions",
                                      {"execution_type": "now"}), 403, "vendor-error")
        assert "scripts.allow_anonymous" in body["message"]
        raw, ctype = multipart(("file", "x.sh", None, b"true\n"))
        body = assert_error(g.request("POST", f"{APP}/scripts", raw=raw,
                                      headers={"Content-Type": ctype}), 403, "vendor-error")
        assert "scripts.allow_anonymous" in body["message"]
        # a plugin's scripts run code too: the same gate
        g.wait_for("/apps", lambda b: "plc_1" in {i["id"] for i in b["items"]}, timeout=20)
        assert g.get("/apps/plc_1/scripts").status == 200
        body = assert_error(g.request("POST", "/apps/plc_1/scripts/calibrate/executions",
                                      {"execution_type": "now"}), 403, "vendor-error")
        assert "scripts.allow_anonymous" in body["message"]
        body = assert_error(g.request("POST", "/apps/plc_1/scripts", raw=raw,
                                      headers={"Content-Type": ctype}), 403, "vendor-error")
        assert "scripts.allow_anonymous" in body["message"]
    finally:
        g.stop()
    assert "scripts.allow_anonymous is on" not in (tmp / "gateway.log").read_text()


# --- a killed gateway --------------------------------------------------------------------------


def test_a_restarted_gateway_ends_the_runs_of_a_killed_one(secure: Gateway, domain: int
                                                           ) -> None:
    paths = [run(secure, "escaper") for _ in range(2)]
    children = [child_of(secure, p) for p in paths]
    assert secure.proc is not None
    os.kill(secure.proc.pid, signal.SIGKILL)
    secure.proc.wait(10)
    time.sleep(0.5)
    assert all(alive(c) for c in children)  # nothing ended them: the gateway died at once
    secure.start()
    until(lambda: not any(alive(c) for c in children), 10)
    secure.wait_for("/apps", lambda b: "calibration" in {i["id"] for i in b["items"]},
                    timeout=30)
    secure.token = token(secure)  # type: ignore[attr-defined]
    # ids are never reused: the new process's runs have ids the old ones never had
    assert call(secure, "GET", paths[0]).status == 404
    fresh = run(secure, "holder")
    assert fresh.rsplit("/", 1)[1] not in {p.rsplit("/", 1)[1] for p in paths}
    assert fresh.rsplit("_", 1)[0] != paths[0].rsplit("_", 1)[0]  # another process tag
    secure.wait_for(fresh, lambda b: b["status"] == "completed", timeout=20)
