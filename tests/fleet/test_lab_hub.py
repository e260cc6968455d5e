"""The link hub (tests/fleet/linkemu.py --hub): one process serves many robots' links, each
link's sockets inside its robot's namespace (root only). bench/fleet.py runs 100 robots'
links this way, spread over one hub per core; here two hubs, a robot on each."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.fleet.lab import (
    GATEWAY_PORT,
    LAN_PORT,
    Lab,
    LabRobot,
    lab_unusable,
    python_argv,
    request,
    wait_until,
)
from tests.fleet.linkemu import command

pytestmark = pytest.mark.integration

# a stand-in for a robot's gateway on its own loopback: answers its host's name
SERVER = ("import http.server, socket\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        body = socket.gethostname().encode()\n"
          "        self.send_response(200); self.send_header('Content-Length', str(len(body)))\n"
          "        self.end_headers(); self.wfile.write(body)\n"
          "    def log_message(self, *a): pass\n"
          f"http.server.HTTPServer(('127.0.0.1', {GATEWAY_PORT}), H).serve_forever()\n")


@pytest.fixture(scope="module")
def hub_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, dict[str, LabRobot]]]:
    why = lab_unusable()
    if why:
        pytest.skip(why)
    logs = tmp_path_factory.mktemp("hub")
    with Lab(["r1", "r2"]) as lab:
        assert len(lab.start_link_hubs(logs, 2)) == 2 and len(lab.hubs) == 2
        robots = {}
        for k, name in enumerate(("r1", "r2")):  # one robot on each hub
            lab[name].run(python_argv("-c", SERVER), logs / f"{name}.server.log")
            robots[name] = LabRobot(lab[name], logs)
            hub = lab.hub_for(k)
            assert hub is not None
            answer = command(hub, f"add /run/netns/{lab[name].ns} 0.0.0.0:{LAN_PORT} "
                                  f"127.0.0.1:{GATEWAY_PORT} {robots[name].control} rtt_ms=40")
            assert answer == "ok", answer
        for robot in robots.values():
            wait_until(lambda r=robot: answers(r) is not None, 30, f"{robot.host.name}'s link")
        yield lab, robots
    assert not [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                            text=True).stdout.split() if ns.startswith(lab.prefix)]


def answers(robot: LabRobot, timeout: float = 2.0) -> str | None:
    try:
        status, _, body = request("GET", f"{robot.url}/", timeout=timeout)
    except OSError:
        return None
    return body.decode() if status == 200 else None


def test_each_link_reaches_its_own_robot_with_the_links_delay(
        hub_lab: tuple[Lab, dict[str, LabRobot]]) -> None:
    _, robots = hub_lab
    for name, robot in robots.items():
        t0 = time.monotonic()
        assert answers(robot) == name  # the inner side dialled the robot's own loopback
        assert time.monotonic() - t0 >= 0.08  # handshake and request: two round trips


def test_a_partition_cuts_one_link_only(hub_lab: tuple[Lab, dict[str, LabRobot]]) -> None:
    _, robots = hub_lab
    assert robots["r1"].link_command("partition on") == "ok"
    try:
        assert answers(robots["r1"], timeout=1.0) is None
        assert answers(robots["r2"]) == "r2"
    finally:
        assert robots["r1"].link_command("partition off") == "ok"
    assert wait_until(lambda: answers(robots["r1"]), 20, "r1 after the heal") == "r1"
