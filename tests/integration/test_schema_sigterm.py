"""A stop while a slow schema validation runs: the gateway leaves in its grace, the worker with it.

The schema has no regex and passes the upload checks; its work grows with the parameters (an
array whose every item walks a tree of refs). On a thread pool the validation ran on after its
budget and held the process at exit until the hard-exit timer (grace + 13 s).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error, wait_until
from tests.integration.test_bulk_data import multipart
from tests.schemacheck.test_schema_worker import alive, doubling

pytestmark = pytest.mark.integration

ROBOT_NODES = ("calibration",)
APP = "/apps/calibration"
SLOW_SCHEMA = {"type": "object", "$defs": doubling(9)["$defs"],
               "properties": {"xs": {"type": "array", "items": {"$ref": "#/$defs/d0"}}}}


@pytest.fixture(scope="module")
def started(robot: Robot, domain: int,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, Path]]:
    tmp = tmp_path_factory.mktemp("gw")
    scripts = tmp / "scripts"
    scripts.mkdir()
    (scripts / "slowcheck.sh").write_text("echo ran\n")
    (scripts / "slowcheck.json").write_text(json.dumps({"parameters_schema": SLOW_SCHEMA}))
    settings = [f"state_dir={tmp}", f"scripts.scripts_dir={scripts}", "scripts.allow_root=true",
                "scripts.allow_anonymous=true"]
    g = Gateway(free_port(), domain, settings, tmp / "gateway.log").start()
    try:
        g.wait_for("/apps", lambda b: "calibration" in {i["id"] for i in b["items"]}, timeout=30)
        yield g, tmp / "gateway.log"
    finally:
        g.stop()


def _workers(pid: int) -> list[int]:
    """Validation workers of the gateway process pid."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (proc / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and b"_schema_child" in cmdline:
            out.append(int(proc.name))
    return out


def test_an_upload_whose_refs_unfold_exponentially_is_refused(
        started: tuple[Gateway, Path]) -> None:
    g, _ = started
    raw, ctype = multipart(("file", "s.sh", None, b"true\n"),
                           ("metadata", None, None,
                            json.dumps({"parameters_schema": doubling(30)}).encode()))
    body = assert_error(g.request("POST", f"{APP}/scripts", raw=raw,
                                  headers={"Content-Type": ctype}), 400, "invalid-parameter")
    assert "more than 10000 subschemas" in body["message"], body


def test_sigterm_during_a_slow_validation_stops_the_gateway_in_its_grace(
        started: tuple[Gateway, Path]) -> None:
    g, log_path = started
    assert g.proc is not None
    path = f"{APP}/scripts/slowcheck/executions"
    quick = g.request("POST", path, {"execution_type": "now", "parameters": {"xs": [1]}})
    assert quick.status == 202, quick  # the schema itself is accepted and works
    answers: list[Response | BaseException] = []

    def post() -> None:
        params: dict[str, Any] = {"xs": ["x"] * 100_000}  # each item walks ~2000 subschemas
        try:
            answers.append(g.request("POST", path, {"execution_type": "now",
                                                    "parameters": params}, timeout=60))
        except OSError as exc:
            answers.append(exc)

    client = threading.Thread(target=post, daemon=True)
    client.start()
    pid = g.proc.pid
    busy: list[int] = []
    try:
        busy = wait_until(lambda: _workers(pid), 15, "a validation worker of the gateway")
    except AssertionError:
        pass  # asserted after the stop, whose time is the point
    time.sleep(2.0)  # validating now, some 3 s before its 5 s budget ends
    t0 = time.monotonic()
    g.proc.send_signal(signal.SIGTERM)
    g.proc.wait(30)
    took = time.monotonic() - t0
    client.join(30)
    log = log_path.read_text(errors="replace")
    # the hard-exit timer would end it at grace 5 s + 13 s (it writes no line of its own)
    assert took < 10, f"the gateway took {took:.1f} s to stop\n{log[-3000:]}"
    assert busy, "no validation worker process was seen"
    assert g.proc.returncode == 0, log[-3000:]
    assert any(line.endswith(": stopped") for line in log.splitlines()), log[-3000:]
    wait_until(lambda: not any(alive(w) for w in busy), 10, "the validation worker gone")
    assert answers, "the validation call was not answered"
    answer = answers[0]
    if isinstance(answer, Response):  # at the budget (400) or abandoned at the grace (503)
        assert answer.status in (400, 503), answer
        if answer.status == 400:
            assert "validation budget" in json.dumps(answer.json()), answer
