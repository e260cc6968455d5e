"""ROS domain ids of a test run: one counter, always imported as `tests.domains`.

Test modules reach it through different import paths (pytest's `conftest` plugin, `tests.conftest`,
`from tests import conftest`); keeping the counter here means all of them share one sequence, so
no two live fixtures ever get the same domain. The fleet's five fixed domains are left out.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

BASE = int(os.environ.get("DIAG_TEST_DOMAIN_BASE", "20"))
# tests/fleet/conftest.py: primary, robot1, robot2, robot3, junk.
FLEET = range(BASE + 20, BASE + 25)
_domains: Iterator[int] = (d for d in itertools.count(BASE) if d not in FLEET)


def next_domain() -> int:
    """A ROS domain id no other fixture of this run has."""
    return next(_domains)
