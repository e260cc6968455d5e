"""A gateway whose DDS participant goes deaf says so in /health and recovers by itself.

The deafness is real, made by the gateway's test hook (DIAG_GATEWAY_TEST_HOOKS=1,
gateway/ros/rejoin/testhooks.py): SIGUSR2 parks every Fast DDS receive thread of the gateway
process, so its participant still sends but processes nothing it is sent (samples, requests,
announcements); the robot's participants drop off its graph once their 3 s lease runs out,
and the data it serves goes stale. SIGUSR1 re-joins DDS at once (the hook's rejoin wakes the
parked threads before the old participant is closed).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from gateway.ros.rejoin.hearing import SILENT_MIN_SAMPLES
from tests.conftest import free_port
from tests.harness import Gateway, enc, wait_until

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "calibration")
TEMPERATURE = f"/apps/temp_sensor/data/{enc('/powertrain/engine/temperature')}"
DEAF_WITHIN_S = 60.0  # lease 3 s, a check's wait, a fresh participant's look: ~10 s here


def start_gateway(domain: int, log: Path, *settings: str) -> Gateway:
    gw = Gateway(free_port(), domain, ["api.vendor=vendor", *settings], log,
                 env={"DIAG_GATEWAY_TEST_HOOKS": "1"}).start()
    try:
        gw.wait_for("/apps/calibration/operations", lambda b: len(b["items"]) == 1, timeout=60)
        gw.wait_for(TEMPERATURE, lambda b: b["x-vendor"]["status"] == "data", timeout=30)
        wait_until(lambda: health(gw)[0] == 200 and health(gw)[1]["status"] == "healthy", 30,
                   "a healthy gateway")
    except BaseException:
        gw.stop()
        raise
    return gw


@pytest.fixture
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hearing")


def health(gw: Gateway) -> tuple[int, dict[str, Any]]:
    """Status code and body of /health."""
    resp = gw.get("/health")
    return resp.status, resp.json()


def hearing(body: dict[str, Any]) -> dict[str, Any]:
    """The hearing block of a /health body."""
    return body["x-vendor-readiness"]["hearing"]  # type: ignore[no-any-return]


def stamp_s(body: dict[str, Any]) -> float:
    """The header stamp of a temperature read (epoch seconds)."""
    stamp = body["data"]["header"]["stamp"]
    return float(stamp["sec"]) + float(stamp["nanosec"]) / 1e9


def apps(gw: Gateway) -> set[str]:
    """App ids the gateway lists."""
    resp = gw.get("/apps")
    return {i["id"] for i in resp.json()["items"]} if resp.status == 200 else set()


def deafen(gw: Gateway) -> None:
    assert gw.proc is not None
    os.kill(gw.proc.pid, signal.SIGUSR2)


def test_a_deaf_gateway_says_degraded_with_the_reason(robot: Any, domain: int,
                                                      log_dir: Path) -> None:
    # With rejoins off the gateway cannot recover by itself: it must stay degraded, saying
    # why, until something makes a new participant (here the test hook's rejoin).
    gw = start_gateway(domain, log_dir / "off.log", "ros.rejoin.enabled=false")
    try:
        assert hearing(health(gw)[1])["state"] == "hearing"
        deafen(gw)
        deafened = time.monotonic()
        status, body = wait_until(lambda: (lambda h: h if h[0] == 503 else None)(health(gw)),
                                  DEAF_WITHIN_S, "/health to say degraded")
        print(f"degraded {time.monotonic() - deafened:.1f} s after the participant went deaf")
        assert body["status"] == "degraded"
        reason = hearing(body)["reason"]
        assert hearing(body)["state"] == "deaf" and "does not discover them" in reason, body
        warning = [w for w in body["warnings"] if w["code"] == "dds_not_hearing"]
        assert len(warning) == 1 and reason in warning[0]["message"], body["warnings"]
        # no rejoin with rejoins off: still deaf when the slower unseen-participant check
        # (10 s window) reports the participants it does not discover
        wait_until(lambda: health(gw)[1]["x-vendor-readiness"]["participants_unseen"] > 0, 60,
                   "the unseen-participant report")
        status, body = health(gw)
        assert status == 503 and hearing(body)["state"] == "deaf", body
        assert body["x-vendor-readiness"]["rejoins"] == 0
        assert gw.proc is not None
        os.kill(gw.proc.pid, signal.SIGUSR1)  # a new participant: it hears again
        recovered = wait_until(lambda: (lambda h: h if h[0] == 200 else None)(health(gw)), 60,
                               "/health to say healthy again")[1]
        assert recovered["status"] == "healthy" and hearing(recovered)["recoveries"] == 1
        assert not [w for w in recovered["warnings"] if w["code"] == "dds_not_hearing"]
        now = time.time()
        gw.wait_for(TEMPERATURE, lambda b: stamp_s(b) > now, timeout=20)
    finally:
        gw.stop()


def test_a_deaf_gateway_recovers_by_itself(robot: Any, domain: int, ros: Any,
                                           log_dir: Path) -> None:
    gw = start_gateway(domain, log_dir / "on.log")
    try:
        before = health(gw)[1]["x-vendor-readiness"]["rejoins"]
        deafen(gw)
        deafened = time.time()
        wait_until(lambda: health(gw)[1]["x-vendor-readiness"]["rejoins"] > before,
                   DEAF_WITHIN_S, "the gateway to re-join DDS by itself")
        status, body = wait_until(lambda: (lambda h: h if h[0] == 200 else None)(health(gw)),
                                  60, "/health to say healthy again")
        assert body["status"] == "healthy"
        assert hearing(body)["deaf_events"] >= 1 and hearing(body)["recoveries"] >= 1, body
        # it hears again: fresh samples, a node started now is listed
        gw.wait_for(TEMPERATURE, lambda b: stamp_s(b) > deafened, timeout=20)
        ros.node("hearing_late")
        started = time.monotonic()
        wait_until(lambda: "hearing_late" in apps(gw), 30, "a new node to be listed")
        assert time.monotonic() - started <= 5.0
    finally:
        gw.stop()


def test_a_gateway_deaf_to_samples_only_recovers(robot: Any, domain: int, log_dir: Path) -> None:
    # Only the user-data receive threads parked (DIAG_GATEWAY_TEST_PARK=samples, over shared
    # memory and UDP): discovery goes on, so the graph stays as it was, but samples stop: the read
    # serves the last sample ever older. The pooled topic falls silent, a fresh participant
    # receives it: deaf, re-joined, samples again.
    gw = Gateway(free_port(), domain, ["api.vendor=vendor"], log_dir / "samples.log",
                 env={"DIAG_GATEWAY_TEST_HOOKS": "1",
                      "DIAG_GATEWAY_TEST_PARK": "samples"}).start()
    try:
        gw.wait_for(TEMPERATURE, lambda b: b["x-vendor"]["status"] == "data", timeout=30)
        wait_until(lambda: health(gw)[0] == 200, 30, "a healthy gateway")
        # the topic needs a usual period first: SILENT_MIN_SAMPLES received (2 Hz)
        stamps: set[float] = set()
        wait_until(lambda: stamps.add(stamp_s(gw.get(TEMPERATURE).json())) or
                   len(stamps) > SILENT_MIN_SAMPLES, 30, "samples received")
        before = health(gw)[1]["x-vendor-readiness"]["rejoins"]
        deafen(gw)
        deafened = time.time()
        status, body = wait_until(lambda: (lambda h: h if h[0] == 503 else None)(health(gw)),
                                  DEAF_WITHIN_S, "/health to say degraded")
        assert "reach a fresh participant but not the gateway's" in hearing(body)["reason"]
        assert "/powertrain/engine/temperature" in hearing(body)["reason"]
        assert "temp_sensor" in apps(gw)  # the graph did not tell
        wait_until(lambda: health(gw)[0] == 200, 60, "/health to say healthy again")
        body = health(gw)[1]
        assert body["x-vendor-readiness"]["rejoins"] > before
        assert hearing(body)["recoveries"] >= 1
        gw.wait_for(TEMPERATURE, lambda b: stamp_s(b) > deafened, timeout=20)
    finally:
        gw.stop()
