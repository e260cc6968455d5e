"""A gateway started from a shell with the Jazzy prefix sourced runs on its own ROS (Kilted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.harness import Gateway
from tests.jazzy.conftest import JazzyProcess, run_script, script_settings, sourced_jazzy_shell

pytestmark = pytest.mark.integration

APPS = {"jz_sensor", "jz_calib", "jz_params"}
SOURCED = sourced_jazzy_shell()
# Only Jazzy's library directories, no guard: the gateway's own bootstrap runs first and mixes
# them into its LD_LIBRARY_PATH in a random order (without the isolation: fastcdr symbols).
LIBS_ONLY = {"LD_LIBRARY_PATH": SOURCED["LD_LIBRARY_PATH"], "_ROS_WHEELS_BOOTSTRAP_COMPLETE": None}
SHELLS = {"sourced-1": SOURCED, "sourced-2": SOURCED, "sourced-3": SOURCED,
          "jazzy-libs-only": LIBS_ONLY}
SET_ASIDE = {"sourced-1": ("ROS_DISTRO: jazzy", "AMENT_PREFIX_PATH", "LD_LIBRARY_PATH",
                           "PYTHONPATH", "_ROS_WHEELS_BOOTSTRAP_COMPLETE"),
             "jazzy-libs-only": ("LD_LIBRARY_PATH",)}


@pytest.mark.parametrize("shell", SHELLS)
def test_a_gateway_from_a_sourced_jazzy_shell_runs_on_its_own_ros(
        shell: str, jazzy_domain: int, jazzy_robot: JazzyProcess, tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    gw = Gateway(free_port(), jazzy_domain, script_settings(tmp_path), log, env=SHELLS[shell])
    try:
        gw.start(timeout=60)
        ros2 = gw.get("/health").json()["x-vendor-ros2"]
        assert ros2["ros_distro"] == "kilted" and ros2["dds_version"].startswith("3."), ros2
        gw.wait_for("/apps", lambda b: APPS <= {i["id"] for i in b["items"]}, timeout=60)
        read = gw.wait_for("/apps/jz_sensor/data/%2Fjz%2Fmap_info",
                           lambda b: b.get("data") is not None, timeout=30)
        assert read["data"] == {"data": "jazzy map v1"}
        served = gw.get("/health").json()["x-vendor-ros-types"]["interface_paths"]
        if "AMENT_PREFIX_PATH" in SHELLS[shell]:  # the set-aside prefix serves what it has
            assert SOURCED["AMENT_PREFIX_PATH"] in served["prefixes"], served
            assert "nav_msgs" in served["packages"], served
        else:
            assert served["prefixes"] == [], served
        if shell == "sourced-1":  # scripts get the shell's environment: its sourced Jazzy works there
            out = run_script(gw)
            assert "rclpy 7." in out and "/.jazzy/" in out, out
    finally:
        gw.stop()
    assert gw.proc is not None and gw.proc.returncode == 0, log.read_text()[-3000:]
    text = log.read_text()
    line = next(ln for ln in text.splitlines() if "set aside" in ln)
    offered = [ln for ln in text.splitlines() if "ros.interface_paths_from_shell" in ln]
    assert len(offered) == (1 if "AMENT_PREFIX_PATH" in SHELLS[shell] else 0), offered
    for name in SET_ASIDE.get(shell, SET_ASIDE["sourced-1"]):
        assert name in line, line
