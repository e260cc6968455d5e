"""The dashboard on a primary with two robot gateways: robots with status and faults, the
fleet-wide live fault timeline, a peer's fault with its recording, and a robot going offline."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from selenium.webdriver.common.by import By

from gateway.demo.robot import Robot
from tests.conftest import _domains
from tests.e2e.browser import Browser
from tests.e2e.conftest import RECORDER, start_gateway
from tests.e2e.test_dashboard import hold_sse_slots
from tests.harness import Gateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]


LIDAR_FAULTS = {"LIDAR_RANGE_INVALID", "LIDAR_FREQ_UNSUPPORTED", "LIDAR_CALIBRATION_REQUIRED"}


@dataclass
class Fleet:
    primary: Gateway
    robot1: Gateway
    robot2: Gateway

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.primary.port}/"


@pytest.fixture(scope="module")
def fleet(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    logs = tmp_path_factory.mktemp("dash-fleet")
    d1, d2 = next(_domains), next(_domains)
    robots: list[Robot] = []
    gateways: list[Gateway] = []
    try:
        robots.append(Robot.start(d1, nodes=("temp_sensor", "long_calibration"),
                                  log_dir=logs / "r1"))
        robots.append(Robot.start(d2, nodes=("lidar_sensor",), log_dir=logs / "r2"))
        r1 = start_gateway(d1, logs, "robot1", [])
        gateways.append(r1)
        r2 = start_gateway(d2, logs, "robot2", RECORDER)
        gateways.append(r2)
        primary = start_gateway(domain, logs, "primary", [
            "aggregation.enabled=true",
            f"aggregation.peer_urls=[http://127.0.0.1:{r1.port},http://127.0.0.1:{r2.port}]",
            "aggregation.peer_names=[robot1,robot2]"])
        gateways.append(primary)
        primary.wait_for("/apps", lambda b: {a["id"] for a in b["items"]} >= {
            "temp_sensor", "long_calibration", "lidar_sensor"}, timeout=60)
        # The lidar's faults settle (all confirmed, on the primary too) before any page opens:
        # a change the page reads from the list before the primary's relay from robot2 is open
        # is one the stream never brings, and the page rightly reports it missed.
        for gw in (r2, primary):
            gw.wait_for("/faults", lambda b: LIDAR_FAULTS <= {
                f["fault_code"] for f in b["items"] if f["status"] == "CONFIRMED"}, timeout=60)
        yield Fleet(primary, r1, r2)
    finally:
        for gw in gateways:
            gw.stop()
        for robot in robots:
            robot.stop()


def card_shows(browser: Browser, name: str, *texts: str, extra: str = "") -> None:
    """Wait until the robot's card (redrawn every second) shows every text."""
    sel = f'.card.robot{extra}[data-robot="{name}"]'

    def shows(d: object) -> bool:
        try:
            text = browser.driver.find_element(By.CSS_SELECTOR, sel).text
        except Exception:  # not drawn yet, or replaced by a redraw
            return False
        return all(t in text for t in texts)

    browser.wait(shows, f"{sel} showing {texts}")


def test_fleet_view_shows_each_robot_with_status_and_faults(browser: Browser,
                                                           fleet: Fleet) -> None:
    fleet.robot2.wait_for("/faults", lambda b: any(
        f["fault_code"] == "LIDAR_RANGE_INVALID" for f in b["items"]), timeout=60)
    browser.open(fleet.url)
    for app in ("temp_sensor", "long_calibration", "lidar_sensor"):
        browser.css(f'#tree a[data-entity="apps/{app}"]', f"{app} in the tree")
    card_shows(browser, "robot1", "online for", "no confirmed faults")
    card_shows(browser, "robot2", "online for", "ERROR")
    assert not browser.driver.find_elements(By.CSS_SELECTOR, '.card.robot[data-robot="local"]')
    row = browser.css('#fleet-faults tr[data-fault="LIDAR_RANGE_INVALID"]', "the lidar fault")
    assert "robot2" in row.text and "ERROR" in row.text
    assert browser.console_errors() == []
    browser.shot("fleet-primary")


def test_live_timeline_shows_events_relayed_from_a_robot(browser: Browser,
                                                        fleet: Fleet) -> None:
    browser.text_in("#stream-state", "live")
    # The primary's relay from robot2 opens with the page and then holds a stream slot there.
    # A clear before that is a change the stream never brought, which the page reports as
    # missed, rightly: clear only once the relay is open.
    fleet.robot2.wait_for("/health", lambda b: b["x-vendor-sse"]["connected_clients"] >= 1,
                          timeout=30)

    def cleared_and_back(d: object) -> bool:
        rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#events tr.event")]  # type: ignore[attr-defined]
        hits = [r for r in rows if "LIDAR_RANGE_INVALID" in r and "robot2" in r]
        if any("fault_cleared" in r for r in hits):
            return any("fault_confirmed" in r for r in hits)
        fleet.primary.request("DELETE", "/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID")
        return False

    # Clear through the primary until the relay carries it (the relay opens with the page);
    # the lidar reports the fault again every 2 s, so it confirms again.
    browser.wait(cleared_and_back, "fault_cleared then fault_confirmed from robot2")
    assert browser.driver.find_elements(By.CSS_SELECTOR, "#timeline circle")
    # every change came over the stream: nothing is reported missed (after the list's grace)
    browser.wait(lambda d: fleet.primary.get("/faults").status == 200 and time.sleep(7) is None,
                 "the grace period")
    note = browser.driver.find_element(By.CSS_SELECTOR, "#stream-missed")
    assert not note.is_displayed(), note.text
    browser.shot("fleet-timeline")


def test_peer_fault_detail_and_recording_through_the_primary(browser: Browser,
                                                            fleet: Fleet) -> None:
    code = "LIDAR_FREQ_UNSUPPORTED"
    fleet.robot2.wait_for(f"/apps/lidar_sensor/faults/{code}", lambda b: any(
        s["type"] == "rosbag" for s in b["environment_data"]["snapshots"]), timeout=60)
    browser.click(f'#fleet-faults tr[data-fault="{code}"] a', "the fault link")
    detail = browser.css(f'.fault-detail[data-fault="{code}"]', "the fault detail")
    assert "WARN" in detail.text and "scan_frequency 25.0 Hz" in detail.text
    browser.text_in("details.frame", "/perception/lidar/scan")
    rec = browser.css(".recording", "the recording")
    rec.find_element(By.CSS_SELECTOR, "button.download").click()
    browser.text_in(".recording .downloaded", "Downloaded")
    name = rec.get_attribute("data-recording")
    target = browser.downloads / name
    browser.wait(lambda d: target.exists() and not any(browser.downloads.glob("*.crdownload")),
                 f"{target} on disk")
    rec_id = name.rsplit(".", 1)[0]
    direct = fleet.robot2.get(f"/apps/lidar_sensor/bulk-data/rosbags/{rec_id}").body
    assert target.read_bytes() == direct


def test_a_robot_whose_events_are_not_relayed_is_shown_behind(browser: Browser,
                                                               fleet: Fleet) -> None:
    # No page open: the primary's relays close and give back their slots on the robots.
    browser.open("about:blank")
    fleet.primary.wait_for("/health", lambda b: b["x-vendor-sse"]["connected_clients"] == 0,
                           timeout=30)
    fleet.robot2.wait_for("/health", lambda b: b["x-vendor-sse"]["connected_clients"] == 0,
                          timeout=30)
    held = hold_sse_slots(fleet.robot2)  # an engineer's tabs on robot2 take every slot
    try:
        browser.open(fleet.url)
        browser.text_in("#stream-state", "live")
        browser.css('#fleet-faults tr[data-fault="LIDAR_RANGE_INVALID"]', "the lidar fault")
        code = "LIDAR_RANGE_INVALID"

        cleared_at = [0.0]

        def shown_behind(d: object) -> bool:
            note = d.find_elements(By.CSS_SELECTOR, "#stream-missed")  # type: ignore[attr-defined]
            rows = [r.text for r in d.find_elements(  # type: ignore[attr-defined]
                By.CSS_SELECTOR, "#events tr.event.from-list")]
            if bool(note) and "robot2" in note[0].text and any(code in r for r in rows):
                return True
            # Cleared on the robot itself: the primary's stream never hears of it. The lidar
            # reports the fault again every 2 s, so it comes back as a new episode.
            if time.monotonic() - cleared_at[0] > 12:  # the page's list reads see the change
                fleet.robot2.request("DELETE", f"/apps/lidar_sensor/faults/{code}")
                cleared_at[0] = time.monotonic()
            return False

        browser.wait(shown_behind, "robot2 shown behind, its change read from the fault list")
        assert "robot1" not in browser.text_of("#stream-missed")
        browser.shot("fleet-behind")
    finally:
        for conn in held:
            conn.close()


def test_a_robot_going_offline_shows_on_its_card(browser: Browser, fleet: Fleet) -> None:
    browser.driver.execute_script("location.hash = '#/fleet'")
    fleet.robot1.stop()
    card_shows(browser, "robot1", "offline for", extra=".offline")
    card_shows(browser, "robot2", "online for")
    # its apps stay in the tree, greyed (x-vendor.available: false)
    browser.css('#tree li.unavailable > a[data-entity="apps/temp_sensor"]', "temp_sensor greyed")
    assert not browser.driver.find_elements(
        By.CSS_SELECTOR, '#tree li.unavailable > a[data-entity="apps/lidar_sensor"]')
