"""A node serving hostile type descriptions (REP-2011): the gateway refuses them with 501 and
stays responsive.

The node announces topics of types the gateway lacks (raw writers under the types' names and
hashes) and answers `~/get_type_description` itself: a self-referencing type (with its own
correct hash), four fixed arrays of 16M elements (correct hash) and a description that does not
match the announced hash. Meanwhile /health is asked in a loop.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import Gateway, enc, expect_line

ROOT = Path(__file__).resolve().parents[2]
HEALTH_BUDGET_S = 0.1

pytestmark = [pytest.mark.integration]

NODE = r"""
import time, rclpy
from rclpy.parameter import Parameter
from type_description_interfaces.msg import Field, FieldType, IndividualTypeDescription
from type_description_interfaces.msg import TypeDescription
from type_description_interfaces.srv import GetTypeDescription
from gateway.ros.interfaces.described import BorrowedTypeSupport
from gateway.ros.dds._rawtopic import RawTopicWriter
from gateway.ros.interfaces.typebuild import description_hash

def described(name, fields):
    return TypeDescription(type_description=IndividualTypeDescription(type_name=name, fields=[
        Field(name=n, type=FieldType(type_id=t, capacity=c, nested_type_name=nested))
        for n, t, c, nested in fields]))

LOOP = described("hostile_msgs/msg/Loop", [("v", 6, 0, ""), ("next", 1, 0, "hostile_msgs/msg/Loop")])
HUGE = described("hostile_msgs/msg/Huge", [(f"x{i}", 6 + 48, 1 << 24, "") for i in range(4)])
LIAR = described("hostile_msgs/msg/Liar", [("v", 6, 0, "")])
TOPICS = {"/hostile_loop": (LOOP, description_hash(LOOP)),
          "/hostile_huge": (HUGE, description_hash(HUGE)),
          "/hostile_liar": (LIAR, "RIHS01_" + "5" * 64)}
BY_NAME = {td.type_description.type_name: td for td, _ in TOPICS.values()}

rclpy.init()
node = rclpy.create_node("hostile_robot", parameter_overrides=[
    Parameter("start_type_description_service", value=False)])

def describe(request, response):
    td = BY_NAME.get(request.type_name)
    response.successful = td is not None
    if td is not None:
        response.type_description = td
    return response

node.create_service(GetTypeDescription, "/hostile_robot/get_type_description", describe)
writers, keep = [], []
for topic, (td, type_hash) in TOPICS.items():
    ts = BorrowedTypeSupport(td.type_description.type_name, type_hash)
    keep.append(ts)
    writers.append(RawTopicWriter(node, None, "rt" + topic, depth=1, transient_local=False,
                                  type_support=ts.address))
print("READY", flush=True)
next_write = 0.0
while rclpy.ok():
    rclpy.spin_once(node, timeout_sec=0.05)
    if time.monotonic() > next_write:
        next_write = time.monotonic() + 0.2
        for w in writers:
            w.publish(b"\x00\x01\x00\x00" + bytes(8))
"""


class HostileNode:
    """The hostile node in its own process."""

    def __init__(self, domain: int) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", NODE], env=ros_env(domain), cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        assert self.proc.stdout is not None
        expect_line(self.proc.stdout, "READY", proc=self.proc)

    def stop(self) -> None:
        """Terminate it."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def hostile(domain: int) -> Iterator[HostileNode]:
    node = HostileNode(domain)
    yield node
    node.stop()


@pytest.fixture(scope="module")
def gw(hostile: HostileNode, domain: int, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gw_hostile")
    with Gateway(free_port(), domain, (), log_path=tmp / "gateway.log") as gateway:
        yield gateway


class HealthProbe:
    """Asks /health in a loop on its own thread; records each answer's latency."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            resp = self.gw.get("/health")
            self.latencies.append(time.perf_counter() - started)
            if resp.status != 200:
                self.failures.append(f"{resp.status}")
            self._stop.wait(0.02)


def _answer(gw: Gateway, method: str, topic: str) -> tuple[int, str]:
    """The gateway's final answer for `topic` (past its 503 while the description is fetched)."""
    path = f"/apps/hostile_robot/data/{enc(topic)}"
    deadline = time.monotonic() + 60
    while True:
        resp = gw.request(method, path, {"v": 1} if method == "PUT" else None)
        if resp.status != 503 and resp.status != 404 or time.monotonic() > deadline:
            return resp.status, resp.body.decode(errors="replace")
        time.sleep(0.2)


def test_hostile_descriptions_answer_501_and_health_stays_fast(gw: Gateway) -> None:
    gw.wait_for("/apps/hostile_robot/data",
                lambda b: {"/hostile_loop", "/hostile_huge", "/hostile_liar"}
                <= {i["id"] for i in b["items"]}, timeout=60)
    answers: dict[tuple[str, str], tuple[int, str]] = {}
    with HealthProbe(gw) as probe:
        deadline = time.monotonic() + 60
        # the first round fetches the descriptions; later ones answer from the failure kept
        while not answers or len(probe.latencies) < 20 and time.monotonic() < deadline:
            for topic in ("/hostile_loop", "/hostile_huge", "/hostile_liar"):
                for method in ("GET", "PUT"):
                    answers[(method, topic)] = _answer(gw, method, topic)
    for (method, topic), (status, text) in answers.items():
        assert status == 501, (method, topic, status, text)
    assert "recursive" in answers[("GET", "/hostile_loop")][1]
    assert "max_fixed_elements" in answers[("GET", "/hostile_huge")][1], answers
    liar = answers[("GET", "/hostile_liar")][1]
    assert "does not match its type hash" in liar and "RIHS01_" + "5" * 64 in liar
    assert gw.proc is not None and gw.proc.poll() is None  # alive
    assert not probe.failures, probe.failures
    assert len(probe.latencies) >= 20
    slowest = max(probe.latencies)
    assert slowest < HEALTH_BUDGET_S, f"/health took {slowest * 1000:.0f} ms"
