"""A Cyclone DDS robot beside the Fast DDS gateway: processes of the `.cyclone` prefix.

`make test` installs the `cyclonedds` binding (Cyclone DDS's C library bundled, no ROS) into
`.cyclone`; tests/cyclone/cyclone_robot.py speaks ROS 2 on the wire as rmw_cyclonedds_cpp does.
Cyclone stays on loopback through a config file in `CYCLONEDDS_URI` (loopback interface, no
multicast, 127.0.0.1 as its only peer), the network rule's Cyclone form.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.domains import next_domain
from tests.harness import ROOT

CYCLONE_PYTHON = ROOT / ".cyclone" / "bin" / "python"
ROBOT_SCRIPT = Path(__file__).resolve().parent / "cyclone_robot.py"
READY_TIMEOUT_S = 60.0
CONFIG = """<CycloneDDS><Domain Id="any">
  <General><Interfaces><NetworkInterface name="lo"/></Interfaces>
    <AllowMulticast>false</AllowMulticast></General>
  <Discovery><Peers><Peer address="127.0.0.1"/></Peers>
    <ParticipantIndex>auto</ParticipantIndex>
    <MaxAutoParticipantIndex>60</MaxAutoParticipantIndex></Discovery>
</Domain></CycloneDDS>
"""
_LOADER_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "AMENT_PREFIX_PATH", "ROS_DISTRO",
                "_ROS_WHEELS_BOOTSTRAP_COMPLETE", "DIAG_GATEWAY_USER_ENV")


def require_cyclone() -> None:
    """Skip (saying how to fix it) when the Cyclone prefix is not installed."""
    if not CYCLONE_PYTHON.exists():
        pytest.skip(f"no Cyclone DDS prefix at {CYCLONE_PYTHON.parent.parent}: `make cyclone` "
                    "installs it")


class CycloneRobot:
    """One cyclone_robot.py process; prints READY once its entities exist."""

    def __init__(self, domain: int, config: Path, log_path: Path, args: Sequence[str]) -> None:
        self.argv = [str(CYCLONE_PYTHON), str(ROBOT_SCRIPT), "--domain", str(domain), *args]
        self.env = {k: v for k, v in os.environ.items() if k not in _LOADER_VARS}
        self.env.update(CYCLONEDDS_URI=config.as_uri(), PYTHONUNBUFFERED="1")
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> CycloneRobot:
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if b"READY" in self.log_path.read_bytes():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"Cyclone robot exited with {self.proc.returncode}: "
                                   f"{self.log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"Cyclone robot not ready in {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


@pytest.fixture(scope="module")
def cyclone_domain() -> int:
    """The ROS domain of this module's Cyclone robots."""
    return next_domain()


@pytest.fixture(scope="module")
def cyclone_robots(cyclone_domain: int, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[dict[str, CycloneRobot]]:
    """Three Cyclone participants: `cy_robot` (node list with 16-byte gids, as since Iron),
    `cy_humble` (24-byte gids, as Humble's rmw_cyclonedds) and `cy_bare` (no node list)."""
    require_cyclone()
    tmp = tmp_path_factory.mktemp("cyclone")
    config = tmp / "cyclonedds.xml"
    config.write_text(CONFIG)
    robots = {
        "cy_robot": CycloneRobot(cyclone_domain, config, tmp / "cy_robot.log",
                                 ["--name", "cy_robot", "--gid-bytes", "16"]),
        "cy_humble": CycloneRobot(cyclone_domain, config, tmp / "cy_humble.log",
                                  ["--name", "cy_humble", "--gid-bytes", "24"]),
        "cy_bare": CycloneRobot(cyclone_domain, config, tmp / "cy_bare.log",
                                ["--name", "cy_bare", "--no-discovery-info"]),
    }
    try:
        for robot in robots.values():
            robot.start()
        yield robots
    finally:
        for robot in robots.values():
            robot.stop()
