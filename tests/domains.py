"""ROS domain ids of a test run: one counter, always imported as `tests.domains`.

Test modules reach it through different import paths (pytest's `conftest` plugin, `tests.conftest`,
`from tests import conftest`); keeping the counter here means all of them share one sequence, so
no two live fixtures ever get the same domain. The fleet's five fixed domains are left out.

Under `pytest -n N` (pytest-xdist, as `make test` runs) each worker process counts in a range of
its own: the ids from DIAG_TEST_DOMAIN_BASE to the highest domain Fast DDS can address are split
into N equal spans, so workers never share a domain either.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

MAX_DOMAIN = 232  # the highest ROS domain id whose DDS ports fit (ROS 2's documented limit)
ROOT_BASE = int(os.environ.get("DIAG_TEST_DOMAIN_BASE", "20"))
WORKERS = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)  # gw0, gw1, ...
SPAN = (MAX_DOMAIN + 1 - ROOT_BASE) // WORKERS
BASE = ROOT_BASE + WORKER * SPAN
# tests/fleet/conftest.py: primary, robot1, robot2, robot3, junk.
FLEET = range(BASE + 20, BASE + 25)


def _sequence() -> Iterator[int]:
    for d in itertools.count(BASE):
        if d in FLEET:
            continue
        if d >= BASE + SPAN:
            raise RuntimeError(
                f"test worker {WORKER} used up its ROS domains {BASE}-{BASE + SPAN - 1}: run "
                "fewer workers (pytest -n) or a lower DIAG_TEST_DOMAIN_BASE")
        yield d


_domains: Iterator[int] = _sequence()


def next_domain() -> int:
    """A ROS domain id no other fixture of this run has."""
    return next(_domains)
