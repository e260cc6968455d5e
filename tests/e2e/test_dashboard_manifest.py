"""The dashboard's entity tree on a hybrid gateway with the demo manifest (`demo --manifest`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import Robot
from tests.e2e.browser import Browser
from tests.e2e.conftest import start_gateway
from tests.harness import Gateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RUNNING = ("temp_sensor", "temp_monitor")  # the other declared apps stay offline


@pytest.fixture(scope="module")
def hybrid(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """Two demo nodes and a gateway in hybrid mode with the shipped manifest and inventory."""
    logs = tmp_path_factory.mktemp("dash-manifest")
    with Robot.start(domain, nodes=RUNNING, log_dir=logs / "robot"):
        gw = start_gateway(domain, logs, "gw", [
            "discovery.mode=hybrid", f"discovery.manifest_path={DEPLOY / 'demo_manifest.yaml'}",
            f"discovery.inventory.csv_path={DEPLOY / 'demo_inventory.csv'}"])
        try:
            gw.wait_for("/apps", lambda b: all(
                a.get("x-vendor", {}).get("is_online") for a in b["items"] if a["id"] in RUNNING),
                timeout=60)
            yield gw
        finally:
            gw.stop()


def tree_path(browser: Browser, entity: str) -> list[str]:
    """The entities from the tree's root down to the first link of `entity`."""
    return list(browser.driver.execute_script("""
      const a = document.querySelector(`#tree a[data-entity="${arguments[0]}"]`);
      const out = []; let n = a && a.closest('li');
      while (n) { out.unshift(n.firstElementChild.dataset.entity); n = n.parentElement.closest('li'); }
      return out;""", entity))


def test_manifest_areas_and_components_form_the_tree(browser: Browser, hybrid: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{hybrid.port}/")
    browser.css('#tree a[data-entity="apps/temp_sensor"]', "the tree")
    browser.wait(lambda d: tree_path(browser, "apps/temp_sensor") == [
        "areas/powertrain", "areas/engine", "components/engine-ecu",
        "components/engine-sensor-board", "apps/temp_sensor"], "temp_sensor under its area")
    assert tree_path(browser, "apps/lidar_sensor") == [
        "areas/perception", "components/perception-computer", "apps/lidar_sensor"]
    boards = browser.read_all('#tree a[data-entity="components/engine-sensor-board"]')
    assert len(boards) == 1  # under its parent, not again beside it in the same area
    door = tree_path(browser, "components/door-module-fl")  # in the subarea doors of body
    assert door[:2] == ["areas/body", "areas/doors"] and door[-1] == "components/door-module-fl"
    sections = browser.read_all("#tree li.sec", "textContent")
    assert sections[0] == "Areas" and "Functions" in sections
    browser.css('#tree a[data-entity="functions/engine-monitoring"]', "the manifest's function")
    browser.shot("tree-manifest")


def test_declared_apps_that_do_not_run_are_greyed(browser: Browser, hybrid: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{hybrid.port}/")
    browser.css('#tree li.unavailable > a[data-entity="apps/tire_pressure_monitor"]',
                "the declared app that never runs, greyed")
    browser.css('#tree li.unavailable > a[data-entity="apps/rpm_sensor"]', "rpm_sensor greyed")
    grey = set(browser.read_all("#tree li.unavailable > a", "data-entity"))
    assert not grey & {"apps/temp_sensor", "apps/temp_monitor"}
    offline = {a["id"] for a in hybrid.get("/apps").json()["items"]
               if not a.get("x-vendor", {}).get("is_online")}
    assert {e.split("/")[1] for e in grey if e.startswith("apps/")} == offline
    browser.driver.execute_script("location.hash = '#/e/apps/rpm_sensor'")
    browser.text_in("#main h2.unavailable", "(not available)")
    assert browser.console_errors() == []


def test_each_module_drawn_once_and_the_card_names_the_gateway(browser: Browser,
                                                               hybrid: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{hybrid.port}/#/fleet")
    browser.css('#tree a[data-entity="apps/temp_sensor"]', "the tree")
    browser.wait(lambda d: tree_path(browser, "components/door-module-fl")[:2] == [
        "areas/body", "areas/doors"], "the door module in its subarea")
    drawn = browser.read_all('#tree a[data-entity^="components/"]', "data-entity")
    assert len(drawn) == len(set(drawn)), sorted(drawn)  # no module drawn twice
    # the card is the gateway's, online (it answers), not named after a component
    card = browser.text_of('.card.robot[data-robot="this gateway"]', "the gateway's card")
    assert "online" in card and "offline" not in card


def test_a_component_shows_its_nameplate(browser: Browser, hybrid: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{hybrid.port}/#/e/components/engine-ecu")
    plate = browser.css("table.nameplate", "the nameplate")
    assert {"Bosch", "MED17", "ECU-EN-0042", "4.2.1"} <= set(plate.text.split())


def test_an_area_data_tab_reads_its_topics_without_errors(browser: Browser,
                                                         hybrid: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{hybrid.port}/#/e/areas/powertrain/data")
    row = '[data-topic="/powertrain/engine/temperature"]'
    value = browser.text_of(f"{row} [data-field='temperature']", "the area's temperature")
    assert float(value) > 0
    browser.css(f'{row}[data-mode="poll"]', "polled: areas have no cyclic subscriptions")
    assert hybrid.get("/health").json()["x-vendor-sse"]["connected_clients"] <= 1
    errors = [e for e in browser.console_errors() if "404" in e["message"]]
    assert errors == []
