"""Fixtures of the in-process gateway tests (the harness: inproc_gateway.py), made available to
every test by tests/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inproc.inproc_gateway import PROFILES, Runner, Scenario, run_gateway
from tests.inproc.inproc_robot import FakeNode


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest) -> str:
    """The wire profile of the gateway under test."""
    return str(request.param)


@pytest.fixture
def gateway(tmp_path: Path, profile: str) -> Runner:
    """run(scenario, settings=(), nodes=None, manifest=None, mode="hybrid", inventory=None):
    one in-process gateway per call (behind a manifest when one is given)."""
    count = 0

    def run(scenario: Scenario, settings: tuple[str, ...] = (),
            nodes: list[FakeNode] | None = None, manifest: str | None = None,
            mode: str = "hybrid", inventory: str | None = None) -> None:
        nonlocal count
        count += 1
        run_gateway(tmp_path / f"gw{count}", profile, scenario, settings, nodes, manifest,
                    mode, inventory)

    return run
