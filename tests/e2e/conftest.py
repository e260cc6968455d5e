"""Fixtures of the dashboard tests: headless Chromium and a demo gateway with the recorder on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.e2e.browser import Browser, chromium_paths
from tests.harness import Gateway

# The demo nodes the dashboard tests look at (a subset keeps the shared cores free).
DEMO_NODES = ("temp_sensor", "temp_monitor", "lidar_sensor", "calibration", "long_calibration")
RECORDER = ["snapshots.rosbag.enabled=true", "snapshots.rosbag.duration_sec=2",
            "snapshots.rosbag.duration_after_sec=0.5"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every dashboard test needs the browser; without it they skip, naming `make browser`."""
    if chromium_paths() is None:
        skip = pytest.mark.skip(reason="chromium and chromedriver missing: run `make browser`")
        for item in items:
            if "tests/e2e/" in str(item.fspath):
                item.add_marker(skip)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per module (fresh profile)."""
    b = Browser()
    try:
        yield b
    finally:
        b.close()


def start_gateway(domain: int, logs: Path, name: str, settings: list[str]) -> Gateway:
    """A gateway on a free port with its own state directory."""
    return Gateway(free_port(), domain, [
        "discovery.refresh_debounce_ms=100", f"state_dir={logs / (name + '-state')}",
        "sse.max_clients=8", *settings], logs / f"{name}.log").start(timeout=60)


@pytest.fixture(scope="module")
def demo(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The demo nodes; a gateway with recordings, uploads and the graph plugin (as the demo)."""
    logs = tmp_path_factory.mktemp("dash")
    with Robot.start(domain, nodes=DEMO_NODES, log_dir=logs / "robot"):
        gw = start_gateway(domain, logs, "gw", [*RECORDER, "bulk_data.categories=[uploads]",
                                                  "plugins=[graph_provider]"])
        try:
            gw.wait_for("/apps", lambda b: {a["id"] for a in b["items"]} >= set(DEMO_NODES),
                        timeout=60)
            yield gw
        finally:
            gw.stop()
