"""Caps with clear errors on a real gateway: manifest YAML that would expand without bound or
nest past the interpreter's stack (at start and on reload). The fault-trigger rule cap is
checked in process (tests/push/test_inproc_push.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import ROOT, Gateway

pytestmark = pytest.mark.integration

MANIFEST = """\
manifest_version: "1.0"
metadata: {{name: caps, version: "{version}"}}
areas:
  - id: plant
components:
  - id: ctl
    area: plant
apps:
  - id: pump
    is_located_on: ctl
"""


def bomb(levels: int) -> str:
    """Each level names the previous one nine times: 9**levels nodes from a few hundred bytes."""
    lines = ['x-a0: &a0 ["lol"]']
    lines += [f"x-a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


DEEP = "x-deep: " + "[" * 3000 + "]" * 3000 + "\n"


def write(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("caps")
    write(root / "manifest.yaml", MANIFEST.format(version="1"))
    return {"root": root, "manifest": root / "manifest.yaml"}


@pytest.fixture(scope="module")
def gw(domain: int, files: dict[str, Path]) -> Iterator[Gateway]:
    root = files["root"]
    settings = ["discovery.mode=manifest_only", f"discovery.manifest_path={files['manifest']}",
                "discovery.manifest.watch_interval_ms=100", f"state_dir={root / 'state'}"]
    with Gateway(free_port(), domain, settings, root / "gateway.log") as g:
        yield g


@pytest.mark.parametrize(("name", "extra", "words"), [
    ("bomb", bomb(7), "aliases expand to more than"),  # 4.8 million nodes expanded
    ("deep", DEEP, "nesting deeper than"),
])
def test_a_reload_of_a_yaml_bomb_is_a_rule_error(gw: Gateway, files: dict[str, Path],
                                                 name: str, extra: str, words: str) -> None:
    write(files["manifest"], MANIFEST.format(version=name) + extra)
    status = gw.wait_for("/manifest/status", lambda b: any(
        words in e["message"] for e in b.get("last_reload", {}).get("errors", [])), timeout=30)
    errors = status["last_reload"]["errors"]
    assert [e["rule"] for e in errors] == ["LOAD"], status
    assert "YAML refused" in errors[0]["message"] and words in errors[0]["message"], errors
    assert errors[0]["file"] == str(files["manifest"])
    assert status["metadata"]["version"] != name  # the previous manifest still serves
    assert gw.get("/apps/pump").status == 200
    assert gw.get("/health").status == 200
    write(files["manifest"], MANIFEST.format(version=f"{name}-fixed"))
    gw.wait_for("/manifest/status", lambda b: b["metadata"]["version"] == f"{name}-fixed",
                timeout=30)


def test_a_yaml_bomb_at_start_stops_run_with_the_rule(tmp_path: Path, domain: int) -> None:
    procs = {}
    for name, extra in (("bomb", bomb(9)), ("deep", DEEP)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(MANIFEST.format(version=name) + extra)
        cmd = [sys.executable, "-m", "gateway", "run", "--port", str(free_port()),
               "--domain", str(domain), "--set", "discovery.mode=manifest_only",
               "--set", f"discovery.manifest_path={path}", "--set", f"state_dir={tmp_path}/s"]
        procs[name] = (path, subprocess.Popen(cmd, cwd=ROOT, env=ros_env(domain),
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for name, (path, proc) in procs.items():
        out, err = proc.communicate(timeout=120)
        text = err.decode()
        assert proc.returncode == 2, (name, text[-2000:])
        assert "[LOAD]" in text and "YAML refused" in text and str(path) in text, text[-2000:]
        assert "Traceback" not in text and "RecursionError" not in text
        assert b"serving" not in out + err
