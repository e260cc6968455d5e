"""Two sites whose robots have the same names, under one top primary: merged function reads
keep every site's items (each site qualifies its own, the top qualifies them again by site).

Each site primary (aggregation.reexport) runs a temp_sensor of its own and has a robot named
robot1 running another: both publish the same topic, so each site answers qualified ids
(`robot1__temp_sensor:/powertrain/...`), which the top takes as valid items.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.domains import next_domain
from tests.harness import Gateway, enc, wait_until

pytestmark = pytest.mark.integration

TEMP = "/powertrain/engine/temperature"
SITES = ("site1", "site2")


@pytest.fixture(scope="module")
def top(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    logs: Path = tmp_path_factory.mktemp("sites")
    with ExitStack() as stack:
        site_urls = []
        for site in SITES:
            robot_domain, site_domain = next_domain(), next_domain()
            for d, who in ((robot_domain, "robot1"), (site_domain, site)):
                stack.enter_context(Robot.start(d, nodes=("temp_sensor",),
                                                log_dir=logs / f"{site}-{who}-nodes"))
            robot = stack.enter_context(Gateway(free_port(), robot_domain, [
                f"state_dir={logs / site / 'robot1'}"], logs / f"{site}-robot1.log"))
            primary = stack.enter_context(Gateway(free_port(), site_domain, [
                f"state_dir={logs / site / 'state'}", "aggregation.enabled=true",
                "aggregation.reexport=true",
                f"aggregation.peer_urls=[http://127.0.0.1:{robot.port}]",
                "aggregation.peer_names=[robot1]"], logs / f"{site}.log"))
            site_urls.append(f"http://127.0.0.1:{primary.port}")
        gw = stack.enter_context(Gateway(free_port(), next_domain(), [
            f"state_dir={logs / 'top'}", "aggregation.enabled=true",
            f"aggregation.peer_urls=[{','.join(site_urls)}]",
            f"aggregation.peer_names=[{','.join(SITES)}]"], logs / "top.log"))
        yield gw


def apps(gw: Gateway) -> set[str]:
    return {a["id"] for a in gw.get("/apps").json()["items"]}


def test_function_read_over_sites_with_repeated_robot_names(top: Gateway) -> None:
    want = {f"{s}__{a}" for s in SITES for a in ("temp_sensor", "robot1__temp_sensor")}
    wait_until(lambda: apps(top) >= want, 120, "both sites' apps on the top primary")

    def read() -> dict[str, Any]:
        resp = top.get("/functions/powertrain/data")
        assert resp.status == 200, resp
        return resp.json()  # type: ignore[no-any-return]

    body = wait_until(lambda: len(read()["items"]) == 4 and read(), 60,
                      "every site's items in the merged function read")
    ids = {i["id"] for i in body["items"]}
    assert ids == {f"{app}:{TEMP}" for app in want}, body
    for item in body["items"]:
        assert item["x-vendor"]["member_ids"] == [item["id"].partition(":")[0]], item
    xv = body["x-vendor"]
    assert "partial" not in xv and "peer_dropped_items" not in xv, xv
    assert xv["contributors"] == list(SITES), xv
    # a qualified id reads through both levels: top -> site2 -> robot1
    item = top.get(f"/functions/powertrain/data/{enc(f'site2__robot1__temp_sensor:{TEMP}')}")
    assert item.status == 200, item
    assert "temperature" in item.json()["data"], item
