"""Helpers of test_wire_profiles.py: one robot, a gateway per wire profile."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import free_port
from tests.harness import Gateway, Response

PROFILES = ("spec", "medkit")
XV = {"spec": "x-vendor", "medkit": "x-medkit"}


@contextlib.contextmanager
def started(domain: int, tmp: Path) -> Iterator[dict[str, Gateway]]:
    """A gateway per profile on the robot's domain, each with its own state directory."""
    gws: dict[str, Gateway] = {}
    try:
        for profile in PROFILES:
            settings = [f"state_dir={tmp / profile}", f"api.profile={profile}",
                        "discovery.refresh_debounce_ms=100", "snapshots.enabled=false",
                        "parameter_service_timeout_sec=5"]  # the machine may be busy
            gws[profile] = Gateway(free_port(), domain, settings, tmp / f"{profile}.log").start()
        for g in gws.values():
            g.wait_for("/apps", lambda b: {"lidar_sensor", "long_calibration",
                                           "unresponsive_param"} <= {i["id"] for i in b["items"]},
                       timeout=30)
        yield gws
    finally:
        for g in gws.values():
            g.stop()


def xv(profile: str, body: dict[str, Any]) -> Any:
    return body[XV[profile]]


def lidar_faults(gw: Gateway, codes: tuple[str, ...] = ("LIDAR_RANGE_INVALID",
                                                       "LIDAR_FREQ_UNSUPPORTED")
                 ) -> dict[str, Any]:
    body = gw.wait_for("/apps/lidar_sensor/faults", lambda b: set(codes) <= {
        i["fault_code"] for i in b["items"]}, timeout=30)
    return {i["fault_code"]: i for i in body["items"]}


def post(gw: Gateway, path: str, body: Any = None, raw: bytes | None = None) -> Response:
    headers = {"Content-Type": "application/json"} if raw is not None else None
    return gw.request("POST", path, body, raw=raw, headers=headers)


def finished(gw: Gateway, location: str) -> dict[str, Any]:
    path = location[len("/api/v1"):]
    # the goal status can say SUCCEEDED a moment before the result arrives
    return gw.wait_for(path, lambda b: b["status"] == "failed" or  # type: ignore[no-any-return]
                       b["status"] == "completed" and "result" in b, timeout=30)
