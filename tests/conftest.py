"""Shared fixtures: real gateway processes and the real demo robot, each module its own domain."""

from __future__ import annotations

import os
import socket

import pytest

# Network rule: every ROS process started by the tests stays on loopback.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

from tests.domains import _domains  # one counter however a module imports it

# The in-process gateway (`gateway`, parametrized over both wire profiles by `profile`): the
# handler tests of every package folder take it.
from tests.inproc.fixtures import gateway, profile  # noqa: F401

# `DIAG_TEST_HOT_WIRE=off` (make test's second run of the hot-answer tests): gateways of
# those tests run with the wire path off (setting server.hot_wire).
HOT_WIRE_SETTINGS = ["server.hot_wire=false"] if os.environ.get("DIAG_TEST_HOT_WIRE") == "off" \
    else []
# `DIAG_TEST_EVENT_LOOP=asyncio` (the same second run): their gateways on asyncio's own loop
# (setting server.event_loop; the first run has them on uvloop, the default).
GATEWAY_RERUN_SETTINGS = HOT_WIRE_SETTINGS + (
    ["server.event_loop=asyncio"] if os.environ.get("DIAG_TEST_EVENT_LOOP") == "asyncio" else [])


# pytest-xdist (`make test` runs `-n`): a module's tests stay on one worker (its module-scoped
# gateways and robot start once), and so do the tests that share something host-wide: the
# namespaced fleet labs and mDNS on loopback ("lan": one LAN at a time, or a primary would
# discover another test's robots) and the Jazzy robot (session-scoped).
SHARED_GROUPS = {"tests/fleet/test_lab": "lan", "tests/fleet/test_mdns": "lan",
                 "tests/jazzy/": "jazzy"}


def xdist_group(path: str) -> str:
    """The worker group of a test file (its path relative to the project root)."""
    return next((group for prefix, group in SHARED_GROUPS.items() if path.startswith(prefix)),
                path)


# The longest modules start first under xdist, so none of them ends the run alone on one worker.
SLOW_FIRST = ("tests/integration/test_schemathesis.py", "tests/fleet/test_lab",
              "tests/fleet/test_mdns", "tests/integration/test_discovery_info.py",
              "tests/integration/test_graph_watch.py", "tests/integration/test_rejoin_soak.py",
              "tests/integration/test_hearing.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist (in each worker, which all collect alike): the slow modules go first."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def slow(item: pytest.Item) -> bool:
        path = item.nodeid.split("::", 1)[0]
        return path.startswith(SLOW_FIRST)

    items.sort(key=lambda item: not slow(item))  # stable: modules stay whole and in order


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under `pytest -n`: whole groups of xdist_group() go to one worker each."""
    if config.getvalue("dist") not in ("load", "loadscope", "loadfile", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # our order (slow modules first), not by test count

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid.split("::", 1)[0])

    return GroupScheduling(config, log)


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def domain() -> int:
    """A ROS domain id of this test module's own."""
    return next(_domains)
