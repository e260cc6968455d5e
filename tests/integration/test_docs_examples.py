"""Examples in the docs run as printed: the reporting node of docs/faults.md, stopped by Ctrl-C."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import ROOT, Gateway

pytestmark = pytest.mark.integration


def _reporting_example() -> str:
    text = (ROOT / "docs" / "faults.md").read_text(encoding="utf-8")
    section = text.split("## Reporting faults from a robot node", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "docs/faults.md lost its reporting example"
    return match.group(1)


def test_the_battery_example_reports_and_stops_cleanly_on_ctrl_c(
        domain: int, tmp_path: Path) -> None:
    script = tmp_path / "battery.py"
    script.write_text(_reporting_example() + "\n", encoding="utf-8")
    env = ros_env(domain)
    with Gateway(free_port(), domain, [f"state_dir={tmp_path / 'state'}"]) as gw:
        proc = subprocess.Popen(
            [sys.executable, str(script), "--ros-args", "-p", "voltage:=9.8"], cwd=ROOT,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            gw.wait_for("/faults", lambda body: any(
                f["fault_code"] == "BATTERY_LOW" for f in body["items"]), timeout=60)
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err, err.decode()
