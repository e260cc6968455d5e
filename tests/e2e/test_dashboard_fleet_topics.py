"""The dashboard on a primary whose two robots run the same node: the tree has a robot level,
and a topic both robots publish shows values that move on each robot's row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from gateway.demo.robot import Robot
from tests.conftest import _domains
from tests.e2e.browser import Browser
from tests.e2e.conftest import start_gateway
from tests.harness import Gateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture(scope="module")
def fleet(domain: int, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[Gateway, Gateway, Gateway]]:
    """Two robots with temp_sensor each, behind a primary: (primary, robot1, robot2)."""
    logs: Path = tmp_path_factory.mktemp("dash-twins")
    d1, d2 = next(_domains), next(_domains)
    gateways: list[Gateway] = []
    with Robot.start(d1, nodes=("temp_sensor",), log_dir=logs / "r1"), \
            Robot.start(d2, nodes=("temp_sensor",), log_dir=logs / "r2"):
        try:
            r1 = start_gateway(d1, logs, "robot1", [])
            gateways.append(r1)
            r2 = start_gateway(d2, logs, "robot2", [])
            gateways.append(r2)
            gw = start_gateway(domain, logs, "primary", [
                "aggregation.enabled=true",
                f"aggregation.peer_urls=[http://127.0.0.1:{r1.port},http://127.0.0.1:{r2.port}]",
                "aggregation.peer_names=[robot1,robot2]"])
            gateways.append(gw)
            gw.wait_for("/apps", lambda b: len(b["items"]) == 2, timeout=60)
            yield gw, r1, r2
        finally:
            for g in gateways:
                g.stop()


@pytest.fixture(scope="module")
def primary(fleet: tuple[Gateway, Gateway, Gateway]) -> Gateway:
    """The primary of the two robots."""
    return fleet[0]


@pytest.fixture(scope="module")
def robots(fleet: tuple[Gateway, Gateway, Gateway]) -> tuple[Gateway, Gateway]:
    """The two robot gateways."""
    return fleet[1], fleet[2]


def test_the_tree_has_a_robot_level(browser: Browser, primary: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{primary.port}/#/fleet")
    for robot in ("robot1", "robot2"):
        node = browser.css(f'#tree li.robot[data-robot="{robot}"]', f"{robot} in the tree")
        apps = node.find_elements(By.CSS_SELECTOR, "a[data-entity]")
        assert [a.get_attribute("data-entity") for a in apps] == [
            f"apps/{robot}__temp_sensor"]
    # under the component and the function, each temp_sensor names its robot
    labels = {t.removeprefix("app") for t in browser.read_all('#tree a[data-entity^="apps/"]')}
    assert labels == {"temp_sensor · robot1", "temp_sensor · robot2"}
    browser.shot("fleet-tree-robots")


def test_a_topic_two_robots_publish_moves_on_both_rows(browser: Browser,
                                                      primary: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{primary.port}/#/e/functions/powertrain/data")
    rows = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "tr[data-topic]") if len(
        d.find_elements(By.CSS_SELECTOR, "tr[data-topic]")) == 2 else False, "both robots' rows")
    topics = [r.get_attribute("data-topic") for r in rows]
    assert sorted(topics) == ["robot1__temp_sensor:/powertrain/engine/temperature",
                              "robot2__temp_sensor:/powertrain/engine/temperature"]
    for topic in topics:
        row = f'tr[data-topic="{topic}"]'
        seen: set[str] = set()

        def moved(d: object, row: str = row, seen: set[str] = seen) -> bool:
            els = d.find_elements(By.CSS_SELECTOR,  # type: ignore[attr-defined]
                                  f"{row} [data-field='temperature']")
            if els and els[0].text:
                seen.add(els[0].text)
            return len(seen) >= 3
        browser.wait(moved, f"three different values on {topic}")
        # each robot's row moves from the page stream (not from the polling fallback)
        mode = browser.driver.find_element(By.CSS_SELECTOR, row).get_attribute("data-mode")
        badge = browser.text_of(f"{row} .pill", "the row's badge")
        assert (mode, badge) == ("sse", "live")


def test_viewers_of_a_function_share_one_stream_per_robot(browser: Browser, primary: Gateway,
                                                          robots: tuple[Gateway, Gateway]
                                                          ) -> None:
    # Two pages watch the function's topics of both robots: the primary reads one page stream
    # of each robot for all of them, so each robot gives the primary one of its SSE slots.
    second = Browser()
    try:
        for b in (browser, second):
            b.open(f"http://127.0.0.1:{primary.port}/#/e/functions/powertrain/data")
        for b in (browser, second):
            b.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, 'tr[data-topic][data-mode="sse"]'))
                   == 2, "both robots' rows live on this page")
        for robot in robots:
            robot.wait_for("/health", lambda h: h["x-vendor-sse"]["connected_clients"] == 1,
                           timeout=30)
        push = primary.get("/health").json()["x-vendor-push"]
        assert push["peer_page_streams"] == 2 and push["peer_links"] == 4, push
        # still one each while both pages stay live
        for b in (browser, second):
            rows = b.driver.find_elements(By.CSS_SELECTOR, 'tr[data-topic][data-mode="sse"]')
            assert len(rows) == 2
        assert [r.get("/health").json()["x-vendor-sse"]["connected_clients"]
                for r in robots] == [1, 1]
    finally:
        second.close()
