"""hardexit.arm: the process leaves with the given status even while a C call holds the GIL."""

from __future__ import annotations

import subprocess
import sys

import pytest

# ctypes.PyDLL keeps the GIL across the call, the way rclpy does during DDS teardown: no
# Python thread (a threading.Timer watchdog, say) can run until it returns.
_CHILD = """
import ctypes, sys
from gateway.process import hardexit
print(hardexit.arm(float(sys.argv[1]), status=int(sys.argv[2])), flush=True)
ctypes.PyDLL(None).sleep(600)
print("the GIL-holding call returned", flush=True)
"""


def _run(seconds: float, status: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CHILD, str(seconds), str(status)],
                          capture_output=True, text=True, timeout=120)


linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc timers")


@linux
@pytest.mark.parametrize("status", [0, 7])
def test_deadline_exits_with_status_while_the_gil_is_held(status: int) -> None:
    done = _run(0.2, status)
    assert done.stdout.splitlines() == ["True"], done.stderr
    assert done.returncode == status


def test_a_deadline_not_in_the_future_is_refused() -> None:
    from gateway.process import hardexit

    assert hardexit.arm(0.0) is False
    assert hardexit.arm(-1.0) is False
