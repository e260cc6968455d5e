"""The fleet simulator (bench/fleet_sim.py) under a real primary: 5 simulated robots dial out
to it, it lists them online, a merged read returns their items, and a fault event of one
robot (raised by a fault cleared through the primary, forwarded to the robot) reaches the
primary's fault stream."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness import wait_until
from tests.integration.fleet_sim_support import SimPrimary, clear_until, fault_events, fleet_sim

pytestmark = pytest.mark.integration

ROBOTS = 5
FAULT = "LIDAR_RANGE_INVALID"  # active on every simulated robot, as on the demo robot


@pytest.fixture(scope="module")
def fleet(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimPrimary]:
    log = tmp_path_factory.mktemp("fleet_sim") / "fleet_sim.log"
    base = 40000 + (os.getpid() % 4000) * ROBOTS  # addresses of this run's own
    args = ["--robots", str(ROBOTS), "--join", "connect", "--rtt-ms", "20", "--hold-s", "900",
            "--domain", str(domain), "--address-base", str(base)]
    with fleet_sim(args, log, 240, "the simulated fleet") as primary:
        yield primary


def test_the_primary_lists_every_simulated_robot_online(fleet: SimPrimary) -> None:
    want = {f"r{k}" for k in range(ROBOTS)}
    wait_until(lambda: fleet.online() >= want, 120, "every simulated robot online")


def test_a_merged_read_returns_every_robots_items(fleet: SimPrimary) -> None:
    want = {f"r{k}" for k in range(ROBOTS)}
    wait_until(lambda: fleet.online() >= want, 120, "every simulated robot online")

    def merged() -> Any:
        # online is not merged yet: until every robot's entity set is in the fleet view, the
        # function may have one contributor, and its read is then that robot's own answer
        status, body, _ = fleet.request("GET", "/functions/perception/data")
        if status != 200 or body.get("failed_peers"):
            return None
        return body if want <= set(body.get("x-vendor", {}).get("contributors", ())) else None
    body = wait_until(merged, 60, "a merged read of every robot without failed peers")
    assert len(body["items"]) >= ROBOTS  # one data item per robot (a topic per gateway)
    status, versions, _ = fleet.request("GET", "/version-info")
    peers = {i.get("x-vendor", {}).get("peer") for i in versions["items"]}
    assert status == 200 and want <= peers


def test_a_fault_event_of_one_robot_reaches_the_primarys_stream(fleet: SimPrimary) -> None:
    wait_until(lambda: "r3" in fleet.online(), 120, "r3 online")
    with fault_events(fleet) as events:
        _, apps, _ = fleet.request("GET", "/apps")
        app = next(a["id"] for a in apps["items"]
                   if a["x-vendor"]["contributors"][:1] == ["r3"])

        def relayed() -> bool:
            return any(e.get("x-vendor", {}).get("peer") == "r3"
                       and e.get("fault", {}).get("fault_code") == FAULT for e in events)
        assert clear_until(fleet, f"/apps/{app}/faults/{FAULT}", relayed), events[-5:]
