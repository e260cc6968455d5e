"""The robot-side FaultReporter (robot_reporter/) on a Jazzy robot's own Python."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.jazzy.conftest import JAZZY_PYTHON, JAZZY_SITE, jazzy_env, jazzy_pip

pytestmark = pytest.mark.integration

NODE = """
import rclpy
from diag_fault_reporter import ERROR, FaultReporter
rclpy.init()
node = rclpy.create_node("jz_reporter_start")
reporter = FaultReporter(node)
reporter.report("JZ_START", ERROR, "a start")
rclpy.spin_once(node, timeout_sec=0.3)
reporter.destroy()
node.destroy_node()
rclpy.shutdown()
print("OK", rclpy.__file__)
"""


def test_installing_it_into_a_jazzy_python_pulls_nothing(reporter_source: Path,
                                                         reporter_site: Path) -> None:
    # What `pip install` into the Jazzy prefix itself would install (offline: nothing else).
    done = jazzy_pip("install", "--dry-run", "--no-index", "--no-build-isolation", "--quiet",
                     "--report", "-", reporter_source)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [i["metadata"]["name"] for i in report["install"]] == ["diag-fault-reporter"]
    assert report["install"][0]["metadata"].get("requires_dist") in (None, [])
    # Installed: the package and its metadata only; no ROS wheel, no bootstrap .pth.
    assert sorted(p.name for p in reporter_site.iterdir()) == [
        "diag_fault_reporter", "diag_fault_reporter-0.1.0.dist-info"]
    assert not any(JAZZY_SITE.glob("diag_fault_reporter*"))  # the prefix itself untouched


@pytest.mark.parametrize("start", range(3))
def test_jazzy_nodes_with_the_reporter_start_cleanly(start: int, jazzy_domain: int,
                                                     reporter_site: Path) -> None:
    env = jazzy_env(jazzy_domain, [reporter_site])
    done = subprocess.run([str(JAZZY_PYTHON), "-c", NODE], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OK ") and "/.jazzy/" in done.stdout, done.stdout
    assert "bad_array_new_length" not in done.stderr
