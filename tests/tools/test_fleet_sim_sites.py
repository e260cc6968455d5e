"""The fleet simulator over sites (bench/fleet_sim.py --sites, bench/_sim_measure.py): how robots
and site links are laid out, and the checks of ids qualified through two levels."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from bench._sim_measure import (
    app_of,
    check_ids,
    check_paths,
    cpu_of,
    established,
    extra_row,
    tcp_connections,
)
from bench._sim_robot import APP, robot_address
from bench.fleet_sim import Fleet, gateway_settings, parse, site_domain

SITE_OF = {"r0": "site0", "r1": "site0", "r2": "site1", "r3": "site1"}


def _apps(*apps: tuple[str, list[str]]) -> bytes:
    return json.dumps({"items": [{"id": i, "x-vendor": {"contributors": c}}
                                 for i, c in apps]}).encode()


def _good() -> list[tuple[str, list[str]]]:
    return [(f"{r}__{APP}", [s]) for r, s in SITE_OF.items()]


def test_robots_split_over_sites_and_each_site_has_a_link_address_of_its_own(
        tmp_path: Path) -> None:
    fleet = Fleet(parse(["--robots", "10", "--sites", "3", "--address-base", "500"]), tmp_path)
    assert fleet.site_names == ["site0", "site1", "site2"]
    counts = [sum(s == k for s in fleet.site_of.values()) for k in range(3)]
    assert counts == [4, 3, 3]
    assert fleet.site_name_of()["r0"] == "site0" and fleet.site_name_of()["r9"] == "site2"
    # after the robots' addresses, distinct from each of them
    assert fleet.site_index == {"site0": 510, "site1": 511, "site2": 512}
    robots = {robot_address(i) for i in fleet.index.values()}
    assert not robots & {robot_address(i) for i in fleet.site_index.values()}
    assert Fleet(parse(["--robots", "4"]), tmp_path).site_name_of() == {}


def test_sites_need_two_robots_each() -> None:
    with pytest.raises(SystemExit):
        parse(["--robots", "5", "--sites", "3"])
    args = parse(["--robots", "6", "--sites", "3"])
    assert args.site_rtt_ms == 20.0 and args.site_rate_bps == 0.0


def test_the_fleet_primary_lists_the_sites_by_their_links(tmp_path: Path) -> None:
    top = gateway_settings("primary", "mdns", {}, "_s", "k", tmp_path,
                           ["site0=http://127.77.2.2:8080", "site1=http://127.77.2.3:8080"])
    assert "aggregation.peer_urls=[http://127.77.2.2:8080,http://127.77.2.3:8080]" in top
    assert "aggregation.peer_names=[site0,site1]" in top


def test_ids_qualified_once_by_their_site_pass() -> None:
    assert check_ids(_apps(*_good(), ("other_app", ["local"])), SITE_OF) == []


@pytest.mark.parametrize(("change", "expect"), [
    (lambda a: a[1:], "1 robots' apps missing"),
    (lambda a: [*a, (f"site0__r0__{APP}", ["site0"])], "no robot's id"),
    (lambda a: [*a, a[0]], "listed twice"),
    (lambda a: [(a[0][0], ["site1"]), *a[1:]], "contributed by ['site1']"),
    (lambda a: [(APP, ["site0"]), *a[1:]], "no robot's id"),
])
def test_ids_qualified_twice_missing_or_from_the_wrong_site_fail(change: Any, expect: str
                                                                 ) -> None:
    problems = check_ids(_apps(*change(_good())), SITE_OF)
    assert any(expect in p for p in problems), problems


def _item(peer: str | None, path: list[str] | None) -> dict[str, Any]:
    vendor: dict[str, Any] = {"peer": peer}
    if path is not None:
        vendor["peer_path"] = path
    return {"x-vendor": vendor}


def test_peer_paths_through_two_levels() -> None:
    good = [_item(s, [s, r]) for r, s in SITE_OF.items()] + [_item("local", None)]
    assert check_paths(good, SITE_OF, "v") == []
    assert check_paths(good[:2], SITE_OF, "v", robots=["r0", "r1"]) == []
    missing = check_paths(good[:2], SITE_OF, "v")
    assert missing and "2 robots without" in missing[0]
    wrong = check_paths([*good, _item("site1", ["site1", "r0"])], SITE_OF, "v")
    assert wrong == ["v: peer 'site1' path ['site1', 'r0'] for r0"]
    longer = check_paths([*good, _item("site0", ["site0", "x", "r0"])], SITE_OF, "v")
    assert len(longer) == 1 and "for r0" in longer[0]


def test_the_app_of_a_robot_through_its_site() -> None:
    body = _apps(*_good())
    assert app_of(body, "r2", "site1") == f"r2__{APP}"
    assert app_of(body, "r2", "site0") is None
    assert app_of(_apps((f"r2__{APP}", ["r2"])), "r2") == f"r2__{APP}"


def test_the_extra_levels_row() -> None:
    assert extra_row("live p50", 130.0, 100.5) == (
        "extra level: live p50 (ms)", "", "29.5 (fleet primary 130.0, site 100.5)")
    assert extra_row("x", float("nan"), 1.0)[2].startswith("-")
    assert extra_row("c", 0.25, 0.125, digits=2)[2] == "0.12 (fleet primary 0.25, site 0.12)"


def test_site_domains_follow_the_primarys_or_are_listed() -> None:
    args = parse(["--robots", "4", "--sites", "2", "--domain", "150"])
    assert [site_domain(args, s) for s in range(2)] == [151, 152]
    args = parse(["--robots", "4", "--sites", "2", "--site-domains", "7,9"])
    assert [site_domain(args, s) for s in range(2)] == [7, 9]
    with pytest.raises(SystemExit):
        parse(["--robots", "4", "--sites", "2", "--site-domains", "7"])


def test_established_connections_of_a_process_are_counted_by_inode() -> None:
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    row = "   0: 0100007F:1F90 0100007F:D431 {st} 00000000:00000000 00:00000000 00000000  1000        0 {inode} 1\n"
    tcp = head + row.format(st="01", inode="11") + row.format(st="0A", inode="12") \
        + row.format(st="01", inode="99")
    tcp6 = head + row.format(st="01", inode="13")
    assert established([tcp, tcp6], {"11", "12", "13"}) == 2  # 12 listens; 99 is another's
    assert established([head], {"11"}) == 0
    assert tcp_connections(os.getpid()) >= 0


def test_cpu_of_this_process_counts_its_work() -> None:
    # a running thread's schedstat grows at the scheduler's tick or a switch: work until it
    # does (a few milliseconds of work may not show at once)
    before = cpu_of([os.getpid()])
    deadline = time.monotonic() + 30
    while cpu_of([os.getpid()]) == before and time.monotonic() < deadline:
        sum(range(300_000))
    assert cpu_of([os.getpid()]) > before and cpu_of([]) == 0
