"""Scripts on a real gateway: managed and uploaded scripts, runs that print, fail and hang
(stopped, then killed, no process left in the group), uploads (the concurrency cap and the
timeout: tests/scripts/test_inproc_scripts.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error
from tests.integration.test_bulk_data import multipart
from tests.scripts.test_script_runner import group_members

pytestmark = pytest.mark.integration

ROBOT_NODES = ("calibration",)
APP = "/apps/calibration"
ENV_SECRET = "env-token-value-4242"  # in the gateway's environment under a secret-looking name
PEER_SECRET = "Bearer peer-credential-7777"  # a secret setting, also in a plain env variable

SCRIPTS = {
    "hello.sh": 'echo "hello ${PARAM_WHO:-world} on $DIAG_ENTITY_ID"\nenv\n',
    "fail.sh": "echo boom >&2\nexit 7\n",
    # ignores SIGTERM (saying so), leaves a background child in its group, and hangs
    "hang.sh": "trap 'echo got TERM' TERM\nsleep 300 &\necho started\n"
               "while true; do sleep 0.1; done\n",
    "count.py": "import argparse\np = argparse.ArgumentParser()\n"
                "p.add_argument('--count', type=int)\nprint('count=%d' % p.parse_args().count)\n",
}
SIDECARS = {
    "count.json": {"name": "Counter", "description": "prints its count",
                   "args": [{"name": "count", "flag": "--count"}],
                   "parameters_schema": {"type": "object", "required": ["count"],
                                         "properties": {"count": {"type": "integer",
                                                                  "minimum": 1}}}},
}


@pytest.fixture(scope="module")
def uploads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("uploads")


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, tmp_path_factory: pytest.TempPathFactory,
       uploads: Path) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw")
    scripts_dir = tmp / "scripts"
    scripts_dir.mkdir()
    for name, text in SCRIPTS.items():
        (scripts_dir / name).write_text(text)
    for name, meta in SIDECARS.items():
        (scripts_dir / name).write_text(json.dumps(meta))
    settings = [f"state_dir={tmp}", f"scripts.scripts_dir={scripts_dir}",
                "scripts.allow_root=true", f"scripts.upload_dir={uploads}", "scripts.max_concurrent_executions=2",
                "scripts.max_file_size_mb=1", f"aggregation.peer_auth_header={PEER_SECRET}",
                "scripts.allow_anonymous=true"]
    os.environ["GATEWAY_API_TOKEN"] = ENV_SECRET
    os.environ["HARMLESS_LOOKING"] = PEER_SECRET
    try:
        g = Gateway(free_port(), domain, settings, tmp / "gateway.log").start()
    finally:
        del os.environ["GATEWAY_API_TOKEN"], os.environ["HARMLESS_LOOKING"]
    try:
        g.wait_for("/apps", lambda b: "calibration" in {i["id"] for i in b["items"]}, timeout=30)
        yield g
    finally:
        g.stop()


def run(gw: Gateway, script: str, body: dict[str, Any] | None = None) -> Response:
    return gw.request("POST", f"{APP}/scripts/{script}/executions",
                      body if body is not None else {"execution_type": "now"})


def started(gw: Gateway, script: str, **params: Any) -> str:
    """Start a run; its execution path."""
    body: dict[str, Any] = {"execution_type": "now"}
    if params:
        body["parameters"] = params
    resp = run(gw, script, body)
    assert resp.status == 202, resp
    loc = resp.headers["location"]
    assert loc == f"/api/v1{APP}/scripts/{script}/executions/{resp.json()['id']}"
    assert resp.json()["status"] in ("running", "completed", "failed")
    return loc[len("/api/v1"):]


def finished(gw: Gateway, path: str) -> dict[str, Any]:
    return gw.wait_for(path, lambda b: b["status"] not in ("prepared", "running"),
                       timeout=30)  # type: ignore[no-any-return]


def test_a_script_that_prints_without_the_gateways_secrets(gw: Gateway) -> None:
    body = finished(gw, started(gw, "hello", who="ops"))
    assert body["status"] == "completed" and body["progress"] == 100
    out = body["parameters"]["stdout"]
    assert out.startswith("hello ops on calibration\n")
    assert body["parameters"]["exit_code"] == 0 and body["started_at"] <= body["completed_at"]
    assert "DIAG_EXECUTION_ID=" + body["id"] in out
    assert ENV_SECRET not in out and "peer-credential-7777" not in out
    assert "GATEWAY_API_TOKEN" not in out and "HARMLESS_LOOKING" not in out


def test_a_script_that_fails(gw: Gateway) -> None:
    body = finished(gw, started(gw, "fail"))
    assert body["status"] == "failed"
    assert body["parameters"]["exit_code"] == 7 and body["parameters"]["stderr"] == "boom\n"
    assert "code 7" in body["error"]["message"]


def test_a_script_that_hangs_is_stopped_then_killed(gw: Gateway) -> None:
    path = started(gw, "hang")
    body = gw.wait_for(path, lambda b: "started" in b["parameters"]["stdout"], timeout=20)
    pgid = body["x-vendor"]["pid"]
    assert len(group_members(pgid)) >= 2  # the shell and its background child
    assert_error(gw.request("DELETE", path), 409, "vendor-error", "script-running")
    resp = gw.request("PUT", path, {"action": "stop"})
    assert resp.status == 202, resp
    body = gw.wait_for(path, lambda b: "got TERM" in b["parameters"]["stdout"], timeout=20)
    assert body["status"] == "running"  # SIGTERM ignored
    assert gw.request("PUT", path, {"action": "forced_termination"}).status == 202
    body = finished(gw, path)
    assert body["status"] == "terminated" and body["parameters"]["exit_code"] == -9
    assert group_members(pgid) == []  # no orphan left in its process group
    assert_error(gw.request("PUT", path, {"action": "stop"}), 409, "vendor-error",
                 "script-not-running")
    assert_error(gw.request("PUT", path, {"action": "pause"}), 400, "invalid-parameter")
    assert gw.request("DELETE", path).status == 204
    assert_error(gw.get(path), 404)


def test_parameters_become_arguments(gw: Gateway) -> None:
    body = finished(gw, started(gw, "count", count=3))
    assert body["parameters"]["stdout"] == "count=3\n"


def test_upload_run_and_delete(gw: Gateway, uploads: Path) -> None:
    raw, ctype = multipart(("file", "probe.sh", "text/x-sh", b"echo probe $1\n"),
                           ("metadata", None, None, json.dumps(
                               {"name": "Probe", "description": "uploaded"}).encode()))
    resp = gw.request("POST", f"{APP}/scripts", raw=raw, headers={"Content-Type": ctype})
    assert resp.status == 201, resp
    created = resp.json()
    assert created["name"] == "Probe" and resp.headers["location"].endswith(created["id"])
    detail = gw.get(f"{APP}/scripts/{created['id']}").json()
    assert detail["managed"] is False and detail["description"] == "uploaded"
    assert finished(gw, started(gw, created["id"]))["parameters"]["stdout"] == "probe\n"
    assert_error(gw.request("DELETE", f"{APP}/scripts/hello"), 409, "vendor-error",
                 "script-managed")
    raw, ctype = multipart(("file", "wait.py", None, b"import time\ntime.sleep(60)\n"))
    waiting = gw.request("POST", f"{APP}/scripts", raw=raw,
                         headers={"Content-Type": ctype}).json()["id"]
    path = started(gw, waiting)
    assert_error(gw.request("DELETE", f"{APP}/scripts/{waiting}"), 409, "vendor-error",
                 "script-running")
    assert gw.request("PUT", path, {"action": "stop"}).status == 202
    assert finished(gw, path)["status"] == "terminated"
    assert gw.request("DELETE", f"{APP}/scripts/{waiting}").status == 204
    assert gw.request("DELETE", f"{APP}/scripts/{created['id']}").status == 204
    assert_error(gw.get(f"{APP}/scripts/{created['id']}"), 404)
    assert not any(p.is_file() for p in uploads.rglob("*"))


def test_a_script_reaches_the_gateways_ros_domain(robot: Robot, domain: int,
                                                  tmp_path: Path) -> None:
    # The shell that starts this gateway has no ROS_DOMAIN_ID; `--domain` names the robot's.
    scripts_dir = tmp_path / "scripts"
    scripts_dir.mkdir()
    (scripts_dir / "hello.sh").write_text(SCRIPTS["hello.sh"])
    settings = [f"state_dir={tmp_path / 'state'}", f"scripts.scripts_dir={scripts_dir}",
                "scripts.allow_anonymous=true", "scripts.allow_root=true"]
    with Gateway(free_port(), domain, settings, tmp_path / "gateway.log",
                 env={"ROS_DOMAIN_ID": None}) as g:
        g.wait_for("/apps", lambda b: "calibration" in {i["id"] for i in b["items"]},
                   timeout=30)
        body = finished(g, started(g, "hello"))
    env = dict(line.split("=", 1) for line in body["parameters"]["stdout"].splitlines()
               if "=" in line)
    assert env.get("ROS_DOMAIN_ID") == str(domain), env.get("ROS_DOMAIN_ID")
    assert env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") == "LOCALHOST"
