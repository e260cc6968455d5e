"""ROS domain ids of a test run: one counter, always imported as `tests.domains`.

Test modules reach it through different import paths (pytest's `conftest` plugin, `tests.conftest`,
`from tests import conftest`); keeping the counter here means all of them share one sequence, so
no two live fixtures ever get the same domain. The fleet's five fixed domains are left out.

Under `pytest -n N` (pytest-xdist, as `make test` runs) the worker processes take their ids from
one counter in a file of the run (locked while read and written), so workers never share a domain
either; each worker takes its fleet's five at its start.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

MAX_DOMAIN = 232  # the highest ROS domain id whose DDS ports fit (ROS 2's documented limit)
RESERVED = frozenset({99})  # tests/ros/test_portowners.py binds a participant's ports of it
BASE = int(os.environ.get("DIAG_TEST_DOMAIN_BASE", "20"))
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # set in pytest-xdist workers only
COUNTER = Path(tempfile.gettempdir()) / f"diag-test-domains-{RUN}" if RUN else None


def _take(n: int) -> int:
    """The first of n consecutive ids no other worker of this run has taken."""
    assert COUNTER is not None
    with open(COUNTER, "a+", encoding="ascii") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        first = int(f.read().strip() or BASE)
        while any(d in RESERVED for d in range(first, first + n)):
            first += 1
        f.seek(0)
        f.truncate()
        f.write(str(first + n))
    if first + n - 1 > MAX_DOMAIN:
        raise RuntimeError(f"the test run used up the ROS domains {BASE}-{MAX_DOMAIN}: run "
                           "fewer modules or a lower DIAG_TEST_DOMAIN_BASE")
    return first


def _fleet() -> range:
    first = _take(5) if COUNTER is not None else BASE + 20
    return range(first, first + 5)


# tests/fleet/conftest.py: primary, robot1, robot2, robot3, junk.
FLEET = _fleet()


def _sequence() -> Iterator[int]:
    if COUNTER is not None:
        while True:
            yield _take(1)
    for d in itertools.count(BASE):
        if d in FLEET or d in RESERVED:
            continue
        if d > MAX_DOMAIN:
            raise RuntimeError(f"the test run used up the ROS domains {BASE}-{MAX_DOMAIN}")
        yield d


_domains: Iterator[int] = _sequence()


def next_domain() -> int:
    """A ROS domain id no other fixture of this run has."""
    return next(_domains)
