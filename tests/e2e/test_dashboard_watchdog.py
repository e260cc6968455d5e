"""The dashboard with the graph watchdog (as `diag-gateway demo` runs it): its fault opens from
the fleet list, the function graph marks the edge the watchdog flags; lifecycle and scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import Robot
from tests.conftest import _domains
from tests.e2e.browser import Browser
from tests.e2e.conftest import start_gateway
from tests.harness import Gateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]

CODE = "GRAPH_QOS_MISMATCH"


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The powertrain nodes (temp_monitor asks rpm for TRANSIENT_LOCAL) and the watchdog."""
    logs: Path = tmp_path_factory.mktemp("dash-watchdog")
    scripts = logs / "scripts"
    scripts.mkdir()
    (scripts / "count.sh").write_text(
        'for i in $(seq 1 60); do echo "line $i"; sleep 0.5; done\n')
    dom = next(_domains)
    with Robot.start(dom, nodes=("temp_sensor", "temp_monitor", "rpm_sensor",
                                 "managed_lifecycle"),
                     log_dir=logs / "robot"):
        gw = start_gateway(dom, logs, "gw", [
            "plugins=[graph_provider,graph_watchdog,update_provider]",
            "plugins.graph_watchdog.warmup_cycles=2",
            "plugins.graph_watchdog.tick_interval_ms=500",
            "plugins.graph_watchdog.qos_mismatch.grace=2",
            f"scripts.scripts_dir={scripts}", "scripts.allow_anonymous=true",
            "scripts.allow_root=true"])
        try:
            gw.wait_for("/faults", lambda b: any(f["fault_code"] == CODE for f in b["items"]),
                        timeout=60)
            yield gw
        finally:
            gw.stop()


def test_a_watchdog_fault_opens_from_the_fleet_list(browser: Browser, watched: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{watched.port}/#/fleet")
    link = browser.css(f'#fleet-faults tr[data-fault="{CODE}"] a', "the watchdog fault's link")
    href = link.get_attribute("href")
    link.click()
    detail = browser.css(f'.fault-detail[data-fault="{CODE}"]', "the fault's detail")
    assert "TRANSIENT_LOCAL" in detail.text, (href, detail.text)
    assert not browser.driver.find_elements("css selector", "#panel .error")
    browser.shot("watchdog-fault")


def test_the_graph_marks_the_edge_the_watchdog_flags(browser: Browser, watched: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{watched.port}/#/e/functions/powertrain/graph")

    def flagged(d: object) -> list[str] | bool:
        got = browser.driver.execute_script(
            "return [...document.querySelectorAll('.graph path.e.flagged')]"
            ".map((p) => p.dataset.topic);")
        return got or False

    topics = browser.wait(flagged, "the flagged edge")
    assert topics == ["/powertrain/engine/rpm"]
    # the pipeline line no longer says a plain "healthy": it names the watchdog's finding
    note = browser.text_of(".graph .flagged-note", "the watchdog's note")
    assert "watchdog flags 1 edge" in note and CODE in note
    assert "TRANSIENT_LOCAL" in browser.text_of(".graph .finding", "the finding's message")
    browser.shot("graph-watchdog")


def test_lifecycle_state_and_a_restart_from_the_status_tab(browser: Browser,
                                                           watched: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{watched.port}/#/e/apps/managed_lifecycle/status")
    browser.css('.status .state[data-state="active"]', "the active state")
    buttons = [b.get_attribute("data-transition") for b in browser.driver.find_elements(
        "css selector", ".transitions button")]
    assert buttons == ["start", "restart", "force-restart", "shutdown", "force-shutdown"]
    browser.click('.transitions button[data-transition="restart"]', "restart")
    browser.text_in("#panel .ok", "restart requested")
    done = browser.text_in('.status .transition[data-transition="completed"]',
                           "deactivate, cleanup, configure, activate")
    assert "restart" in done.text
    browser.css('.status .state[data-state="active"]', "active again")
    # a plain node says it has no lifecycle control
    browser.open(f"http://127.0.0.1:{watched.port}/#/e/apps/temp_sensor/status")
    browser.text_in(".status", "No lifecycle control")
    browser.shot("status")


def test_a_script_runs_streams_its_output_and_stops(browser: Browser, watched: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{watched.port}/#/e/apps/temp_sensor/scripts")
    browser.click('.script[data-script="count"] button[type=submit]', "run")
    browser.text_in('.script[data-script="count"] pre.stdout', "line 2")
    browser.text_in('.script[data-script="count"] .exec-status', "running")
    browser.click('.script[data-script="count"] button.stop', "stop")
    status = browser.css('.script[data-script="count"] .exec-status:not([data-status="running"])',
                         "the run ended")
    assert "stop" in status.text, status.text
    assert "line 60" not in browser.text_of('.script[data-script="count"] pre.stdout')
    browser.shot("scripts")


def test_updates_register_prepare_and_execute(browser: Browser, watched: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{watched.port}/#/fleet")
    browser.click("#nav-updates", "the updates link")
    browser.text_in("#updates", "No updates registered")
    browser.click(".update-form button[type=submit]", "register the example")
    row = 'tr.update[data-update="nav_2_1"]'
    browser.css(row, "the registered update")
    browser.click(f'{row} button[data-op="prepare"]', "prepare")
    browser.css(f'{row}[data-phase="prepared"]', "prepared")
    browser.click(f'{row} button[data-op="execute"]', "execute")
    browser.css(f'{row}[data-status="completed"][data-phase="executed"]', "executed")
    browser.shot("updates")
    browser.click(f'{row} button[data-op="delete"]', "delete")
    browser.text_in("#updates", "No updates registered")
