"""Fixtures shared by the integration modules: the demo robot and a ROS-side helper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.demo.robot import NODES, Robot


@pytest.fixture(scope="module")
def robot(domain: int, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[Robot]:
    """The demo robot in the module's domain: the nodes named by the module's ROBOT_NODES."""
    nodes = getattr(request.module, "ROBOT_NODES", NODES)
    with Robot.start(domain, nodes=nodes, log_dir=tmp_path_factory.mktemp("robot")) as r:
        yield r


@pytest.fixture(scope="module")
def ros(domain: int) -> Iterator[object]:
    """A ROS-side participant (publishers, subscriptions) in the module's domain."""
    from tests.integration.test_faults_support import RosSide

    side = RosSide(domain)
    yield side
    side.close()
