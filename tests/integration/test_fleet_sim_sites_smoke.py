"""The fleet simulator over sites (bench/fleet_sim.py --sites): 2 real site primaries of 2
simulated robots each (dialing out to their site) under a real fleet primary, which reaches
each site through an emulated link. The fleet primary lists both sites online and every robot's
app once, by the id its site qualified it with; a merged read reaches every robot through two
levels (`x-vendor.peer_path` [site, robot]); a forwarded read by the qualified id reaches the
robot; a fault cleared through both levels comes back on the fleet primary's stream."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from bench._sim_measure import check_ids, check_paths
from bench._sim_robot import APP
from tests.domains import _domains
from tests.harness import wait_until
from tests.integration.fleet_sim_support import SimPrimary, clear_until, fault_events, fleet_sim

pytestmark = pytest.mark.integration

ROBOTS, SITES = 4, 2
SITE_OF = {f"r{k}": f"site{k // 2}" for k in range(ROBOTS)}
FAULT = "LIDAR_RANGE_INVALID"  # active on every simulated robot, as on the demo robot


@pytest.fixture(scope="module")
def top(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimPrimary]:
    log = tmp_path_factory.mktemp("fleet_sim_sites") / "fleet_sim.log"
    # addresses of this run's own (test_fleet_sim_smoke.py takes 40000 and up)
    base = 2000 + (os.getpid() % 3000) * (ROBOTS + SITES)
    site_domains = ",".join(str(next(_domains)) for _ in range(SITES))
    args = ["--robots", str(ROBOTS), "--sites", str(SITES), "--join", "connect", "--rtt-ms",
            "20", "--site-rtt-ms", "10", "--hold-s", "900", "--domain", str(domain),
            "--site-domains", site_domains, "--address-base", str(base)]
    with fleet_sim(args, log, 300, "the simulated sites") as primary:
        yield primary


def _ids_ok(top: SimPrimary) -> bool:
    status, _, raw = top.request("GET", "/apps")
    return status == 200 and not check_ids(raw, SITE_OF)


@pytest.fixture(scope="module")
def ready(top: SimPrimary) -> SimPrimary:
    wait_until(lambda: top.online() >= set(SITE_OF.values()), 180, "both sites online at the fleet primary")
    wait_until(lambda: _ids_ok(top), 120, "every robot's app at the fleet primary")
    return top


def test_each_robots_app_is_listed_once_by_its_sites_id(ready: SimPrimary) -> None:
    _, body, raw = ready.request("GET", "/apps")
    assert check_ids(raw, SITE_OF) == []
    ids = {a["id"] for a in body["items"]}
    assert {f"r{k}__{APP}" for k in range(ROBOTS)} <= ids


def test_a_merged_read_reaches_every_robot_through_two_levels(ready: SimPrimary) -> None:
    def merged() -> Any:
        status, body, _ = ready.request("GET", "/version-info")
        if status != 200 or body.get("failed_peers"):
            return None
        return body if not check_paths(body["items"], SITE_OF, "v") else None
    wait_until(merged, 60, "a /version-info with every robot's item through its site")

    def data() -> Any:
        # until both sites' entity sets are merged, the function may have one contributor,
        # and its read is then that site's own answer
        status, body, _ = ready.request("GET", "/functions/perception/data")
        if status != 200 or body.get("failed_peers"):
            return None
        sites = set(body.get("x-vendor", {}).get("contributors", ()))
        return body if sites >= set(SITE_OF.values()) else None
    body = wait_until(data, 60, "a merged data read of both sites without failed peers")
    assert len(body["items"]) >= ROBOTS  # one data item per robot


def test_a_forwarded_read_by_the_qualified_id_reaches_the_robot(ready: SimPrimary) -> None:
    status, body, _ = ready.request("GET", f"/apps/r3__{APP}/faults")
    assert status == 200, body
    assert FAULT in {f["fault_code"] for f in body["items"]}


def test_a_fault_cleared_through_two_levels_comes_back_on_the_fleet_primarys_stream(
        ready: SimPrimary) -> None:
    with fault_events(ready) as events:
        def relayed() -> bool:
            return any(e.get("x-vendor", {}).get("peer_path") == ["site1", "r2"]
                       and e.get("fault", {}).get("fault_code") == FAULT for e in events)
        # cleared through both levels (forwarded fleet -> site1 -> r2) until its event arrives
        assert clear_until(ready, f"/apps/r2__{APP}/faults/{FAULT}", relayed), events[-5:]
        assert all(e["x-vendor"].get("peer") == "site1" for e in events
                   if e.get("x-vendor", {}).get("peer_path") == ["site1", "r2"])
