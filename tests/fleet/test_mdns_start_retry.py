"""mDNS that fails to start is retried with backoff, never fatal: the gateway serves meanwhile.

The failure is zeroconf's own NotRunningException (zeroconf not running within its 9 s on a
loaded host), raised by the gateway's test hook for the first N starts
(DIAG_GATEWAY_TEST_HOOKS=1, DIAG_GATEWAY_TEST_MDNS_START_FAILURES; gateway/federation/mdns.py).
mDNS on loopback, one service type of this run's own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.domains import next_domain
from tests.harness import Gateway, wait_until

pytestmark = pytest.mark.integration

SERVICE = f"_dr{os.getpid() % 100000:05d}._tcp.local."
RETRY_LINE = "mDNS: start failed (attempt "


def mdns(name: str, *, announce: bool = False, discover: bool = False) -> list[str]:
    return [f"aggregation.mdns_service={SERVICE}", f"aggregation.mdns_name={name}",
            "aggregation.mdns_interfaces=[127.0.0.1]",
            f"aggregation.announce={str(announce).lower()}",
            f"aggregation.discover={str(discover).lower()}"]


def hook(failures: str) -> dict[str, str | None]:
    return {"DIAG_GATEWAY_TEST_HOOKS": "1", "DIAG_GATEWAY_TEST_MDNS_START_FAILURES": failures}


def peers(gw: Gateway) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in gw.get("/health").json()["peers"]}


def log_text(gw: Gateway) -> str:
    assert gw.log_path is not None
    return gw.log_path.read_text(errors="replace")


def test_failed_mdns_starts_are_retried_and_the_gateways_serve(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    logs: Path = tmp_path_factory.mktemp("mdns-retry")
    # never starts: it serves all the same, and says so in its log, again and again
    stuck = Gateway(free_port(), next_domain(), [
        f"state_dir={logs / 'stuck'}", *mdns("robot-stuck", announce=True)],
        logs / "stuck.log", env=hook("always"))
    primary = Gateway(free_port(), next_domain(), [
        f"state_dir={logs / 'primary'}", "aggregation.enabled=true",
        *mdns("primary", discover=True)], logs / "primary.log", env=hook("2"))
    robot = Gateway(free_port(), next_domain(), [
        f"state_dir={logs / 'robot'}", *mdns("robot-a", announce=True)],
        logs / "robot.log", env=hook("1"))
    with stuck, primary, robot:
        assert stuck.get("/health").status == 200
        wait_until(lambda: log_text(stuck).count(RETRY_LINE) >= 2, 60,
                   "two failed starts of robot-stuck logged")
        assert "NotRunningException" in log_text(stuck)
        # the primary and robot-a fail first, then find each other
        wait_until(lambda: peers(primary).get("robot-a", {}).get("status") == "online", 90,
                   "robot-a found by mDNS once both started")
        assert log_text(primary).count(RETRY_LINE) == 2
        assert "mDNS: started after 2 failed attempts" in log_text(primary)
        assert log_text(robot).count(RETRY_LINE) == 1
        # robot-stuck still serves and was never announced
        assert stuck.get("/health").status == 200
        assert "robot-stuck" not in peers(primary)
        assert stuck.proc is not None and stuck.proc.poll() is None
