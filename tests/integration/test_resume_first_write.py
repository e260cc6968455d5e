"""The first write after a node resumes reaches it.

A listener node in its own process (the demo's short DDS lease) is stopped with SIGSTOP until
the gateway drops it, then resumed. As soon as the gateway lists it again, one value is written
to its topic through the gateway, once: the listener must receive that value. (Its reader
learns of the gateway's writer again only at the writer's next announcement; a write the
reader has not matched on its side is dropped there, though the gateway's side counted the
match all along.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import Gateway, enc, expect_line, wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CYCLES = 4
COMMAND = f"/apps/resume_listener/data/{enc('/resume/command')}"
LISTENER = r"""
import rclpy
from std_msgs.msg import Float32
rclpy.init()
node = rclpy.create_node("resume_listener")
node.create_subscription(Float32, "/resume/command",
                         lambda m: print(f"GOT {m.data:.1f}", flush=True), 10)
print("READY", flush=True)
rclpy.spin(node)
"""


class Listener:
    """The listener process and the values it printed."""

    def __init__(self, domain: int) -> None:
        env = ros_env(domain)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen([sys.executable, "-c", LISTENER], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        assert self.proc.stdout is not None
        expect_line(self.proc.stdout, "READY", proc=self.proc)
        self.got: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("GOT "):
                self.got.append(line.split()[1])

    def stop(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._reader.join(5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@contextlib.contextmanager
def listener(domain: int) -> Iterator[Listener]:
    proc = Listener(domain)
    try:
        yield proc
    finally:
        proc.stop()


def listed(gw: Gateway) -> bool:
    """The listener is listed with its topic."""
    resp = gw.get("/apps/resume_listener/data")
    return resp.status == 200 and any(i["id"] == "/resume/command"
                                      for i in resp.json()["items"])


def write_once(gw: Gateway, value: float) -> None:
    resp = gw.request("PUT", COMMAND, {"data": value})
    assert resp.status == 200, resp


def test_the_first_write_after_a_node_resumes_reaches_it(domain: int,
                                                         tmp_path: Path) -> None:
    with Gateway(free_port(), domain, ["api.vendor=vendor", "discovery.refresh_debounce_ms=200"],
                 log_path=tmp_path / "gateway.log") as gw, listener(domain) as node:
        wait_until(lambda: listed(gw), 60, "the listener to be listed")
        write_once(gw, 0.5)
        wait_until(lambda: "0.5" in node.got, 20, "the write before any freeze")
        for cycle in range(1, CYCLES + 1):
            os.kill(node.proc.pid, signal.SIGSTOP)
            wait_until(lambda: not listed(gw), 30,
                       "the gateway to drop the stopped node (lease expiry)")
            os.kill(node.proc.pid, signal.SIGCONT)
            wait_until(lambda: listed(gw), 30, f"the resumed node to be listed ({cycle})")
            value = f"{cycle}.5"
            write_once(gw, float(value))
            wait_until(lambda value=value: value in node.got, 20,
                       f"the first write after resume {cycle} to reach the node "
                       f"(it got {node.got})")
