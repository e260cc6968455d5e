"""Discovery latency: time from a node's start (and exit) to its appearance in (absence
from) /apps, against the configured debounce window and the node's own start-up time.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.demo.robot import ros_env  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.harness import Gateway  # noqa: E402

DOMAIN = 96
ROUNDS = 3
NODE = """
import sys, time, rclpy
from rclpy.executors import ExternalShutdownException
rclpy.init()
n = rclpy.create_node('bench_joiner')
print(time.time(), flush=True)   # the node exists from here on
try:
    rclpy.spin(n)
except (KeyboardInterrupt, ExternalShutdownException):
    pass
rclpy.try_shutdown()
"""


def _apps(gw: Gateway) -> set[str]:
    return {i["id"] for i in gw.get("/apps").json()["items"]}


def main() -> None:
    """Measure and print appear/leave latencies."""
    appear, leave = [], []
    with Gateway(free_port(), DOMAIN) as gw:
        for _ in range(ROUNDS):
            proc = subprocess.Popen([sys.executable, "-c", NODE], env=ros_env(DOMAIN),
                                    stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None
            created = float(proc.stdout.readline())
            while "bench_joiner" not in _apps(gw):
                time.sleep(0.02)
            appear.append(time.time() - created)
            time.sleep(1.5)  # let the debounce window pass
            proc.terminate()
            t0 = time.time()
            proc.wait(10)
            while "bench_joiner" in _apps(gw):
                time.sleep(0.02)
            leave.append(time.time() - t0)
            time.sleep(1.5)
    debounce = 1.0
    print(f"discovery latency over {ROUNDS} rounds (refresh debounce {debounce:g} s, "
          "poll 0.2 s)")
    print(f"node created -> in /apps      median {statistics.median(appear):.2f} s   "
          f"max {max(appear):.2f} s   ratio to debounce {max(appear) / debounce:.2f}")
    print(f"node exited  -> gone from /apps median {statistics.median(leave):.2f} s   "
          f"max {max(leave):.2f} s   ratio to debounce {max(leave) / debounce:.2f}")
    print("goal: both within 2 s")


if __name__ == "__main__":
    main()
