"""Shared fixtures: real gateway processes and the real demo robot, each module its own domain."""

from __future__ import annotations

import os
import socket

import pytest

# Network rule: every ROS process started by the tests stays on loopback.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

from tests.domains import _domains  # noqa: E402  (one counter however a module imports it)

# `DIAG_TEST_HOT_WIRE=off` (make test's second run of the hot-answer tests): gateways of
# those tests run with the wire path off (setting server.hot_wire).
HOT_WIRE_SETTINGS = ["server.hot_wire=false"] if os.environ.get("DIAG_TEST_HOT_WIRE") == "off" \
    else []


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def domain() -> int:
    """A ROS domain id of this test module's own."""
    return next(_domains)
