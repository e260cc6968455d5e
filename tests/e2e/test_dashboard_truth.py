"""The dashboard shows only true states and redraws only what changed (the demo): a passed
fault looks passed and leaves the counts, each lidar fault is listed once, repeats of a fault
are one timeline row, nothing is rebuilt at rest, and graph labels do not overlap."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.e2e.browser import Browser
from tests.harness import Gateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]

LIDAR_CODES = ("LIDAR_RANGE_INVALID", "LIDAR_FREQ_UNSUPPORTED")

# Counts childList changes (elements or nodes added or removed) under the watched elements;
# text edited in place (characterData) and attributes are not rebuilds.
OBSERVE = """
  window.__rebuilt = {};
  window.__what = [];
  window.__observers = (window.__observers || []);
  for (const o of window.__observers) o.disconnect();
  window.__observers = arguments[0].map((sel) => {
    const el = document.querySelector(sel);
    window.__rebuilt[sel] = el ? 0 : -1;
    const o = new MutationObserver((list) => {
      for (const m of list) {
        if (m.type !== 'childList') continue;
        window.__rebuilt[sel] += m.addedNodes.length + m.removedNodes.length;
        window.__what.push(`${sel}: ${m.target.nodeName} ${m.target.textContent.slice(0, 60)}`);
      }
    });
    if (el) o.observe(el, {childList: true, subtree: true});
    return o;
  });
  window.__since = performance.now();
"""


def active(f: dict[str, Any]) -> bool:
    """A confirmed fault whose condition has not passed since its last failure."""
    return f["status"] == "CONFIRMED" and not f.get("last_passed", 0) >= f["last_occurred"]


def test_each_lidar_fault_is_listed_once(browser: Browser, demo: Gateway) -> None:
    # the lidar reports its faults and logs each one at its level: once the gateway has both
    # (the log lines are in its buffer), the list still holds one fault per code
    demo.wait_for("/apps/lidar_sensor/logs", lambda b: sum(
        "[LIDAR_RANGE_INVALID]" in str(e) for e in b["items"]) >= 2, timeout=60)
    browser.open(f"http://127.0.0.1:{demo.port}/#/fleet")
    for code in LIDAR_CODES:
        browser.css(f'#fleet-faults tr[data-fault="{code}"]', code)
    codes = [f["fault_code"] for f in demo.get("/faults?status=all").json()["items"]]
    assert all(codes.count(c) == 1 for c in LIDAR_CODES), codes
    assert not [c for c in codes if c.startswith("LOG_LIDAR")], codes
    rows = browser.read_all("#fleet-faults tr[data-fault]", "data-fault")
    assert all(rows.count(c) == 1 for c in LIDAR_CODES), rows
    assert not [r for r in rows if r.startswith("LOG_LIDAR")], rows
    # sources read as the node's name, never an internal path
    for text in browser.read_all("#fleet-faults td.source"):
        assert "/x-plugin/" not in text


def test_the_fleet_view_at_rest_rebuilds_nothing(browser: Browser, demo: Gateway) -> None:
    # at rest: the demo's faults are confirmed (no state change is due) and on the page
    settled = demo.wait_for("/faults", lambda b: {f["fault_code"] for f in b["items"]} >= {
        *LIDAR_CODES, "LIDAR_CALIBRATION_REQUIRED"} and all(
        f["status"] == "CONFIRMED" for f in b["items"]), timeout=90)
    browser.open(f"http://127.0.0.1:{demo.port}/#/fleet")
    for f in settled["items"]:
        browser.css(f'#events tr[data-code="{f["fault_code"]}"][data-event="fault_confirmed"]',
                    f"{f['fault_code']} confirmed on the timeline")
    browser.css('.card.robot[data-robot="this gateway"]', "the gateway's card")
    browser.text_in("#timeline-axis", "now")
    browser.css('#stream-state.live', "the live stream")
    for f in settled["items"]:  # linked to their entity once the tree has loaded
        browser.css(f'#fleet-faults tr[data-fault="{f["fault_code"]}"] a', f"{f['fault_code']}'s link")
    watched = ["#robots", "#timeline", "#timeline-axis", "#events", "#fleet-faults"]
    card = browser.driver.find_element(By.CSS_SELECTOR, '.card.robot[data-robot="this gateway"]')
    # select the card's name: it stays selected while the page ticks
    browser.driver.execute_script("""
      const r = document.createRange(); r.selectNodeContents(arguments[0].querySelector('strong'));
      getSelection().removeAllRanges(); getSelection().addRange(r);""", card)
    browser.driver.execute_script(OBSERVE, watched)
    # a few of the page's 1 s ticks and 3 s reads: the clock on the axis has to be seen moving
    # on (its text is edited in place), and at least two reads of the list made meanwhile
    browser.wait(lambda d: d.execute_script("return performance.now() - window.__since") > 7000,
                 "seven seconds of the page at rest")
    rebuilt = browser.driver.execute_script("return window.__rebuilt")
    what = browser.driver.execute_script("return window.__what.slice(0, 8)")
    assert rebuilt == dict.fromkeys(watched, 0), (rebuilt, what)
    assert browser.driver.execute_script("return getSelection().toString()") == "this gateway"
    same = browser.driver.find_element(By.CSS_SELECTOR, '.card.robot[data-robot="this gateway"]')
    assert same == card  # the same element, not a new one
    browser.driver.execute_script("getSelection().removeAllRanges()")


def test_a_passed_fault_looks_passed_and_leaves_the_counts(browser: Browser,
                                                          demo: Gateway) -> None:
    code = "LIDAR_CALIBRATION_REQUIRED"
    demo.wait_for("/faults", lambda b: any(
        f["fault_code"] == code and f["status"] == "CONFIRMED" for f in b["items"]), timeout=60)
    browser.open(f"http://127.0.0.1:{demo.port}/#/fleet")
    row = f'#fleet-faults tr[data-fault="{code}"]'
    browser.css(f"{row}:not(.passed)", "the calibration fault, active")
    ops = demo.get("/apps/lidar_sensor/operations").json()["items"]
    op = next(o["id"] for o in ops if o["id"].endswith("calibrate"))
    resp = demo.request("POST", f"/apps/lidar_sensor/operations/{op}/executions", {})
    assert resp.status in (200, 201, 202), resp
    # the lidar reports PASSED: with healing off (the default) the fault stays CONFIRMED, yet
    # the dashboard shows it passed (dimmed, labelled) and counts it no more
    fault = demo.wait_for("/faults", lambda b: any(
        f["fault_code"] == code and f.get("last_passed", 0) >= f["last_occurred"]
        for f in b["items"]), timeout=60)
    assert next(f for f in fault["items"] if f["fault_code"] == code)["status"] == "CONFIRMED"
    browser.css(f"{row}.passed", "the fault dimmed as passed")
    assert "passed" in browser.text_of(f"{row} .pill.passed", "its passed label")

    def counts_match(d: Any) -> bool:
        want = {s: 0 for s in ("CRITICAL", "ERROR", "WARN", "INFO")}
        for f in demo.get("/faults").json()["items"]:
            if active(f):
                want[f["severity"] if f["severity"] != "WARNING" else "WARN"] += 1
        shown = {s: 0 for s in want}
        for el in d.find_elements(By.CSS_SELECTOR, '.card.robot[data-robot="this gateway"] .num'):
            if el.is_displayed():
                shown[el.get_attribute("data-sev")] = int(el.text)
        return shown == want
    browser.wait(counts_match, "the card counting active faults only")


def test_repeats_of_a_fault_are_one_timeline_row(browser: Browser, demo: Gateway) -> None:
    # temp_monitor warns with the temperature in the message: every few seconds the
    # log-based fault's message changes (an update), which is one row with a count
    assert demo.request("PUT", "/apps/temp_monitor/configurations/overheat_threshold",
                        {"value": 50.0}).status == 200
    try:
        browser.open(f"http://127.0.0.1:{demo.port}/#/fleet")
        faults = demo.wait_for("/faults", lambda b: any(
            f["fault_code"].startswith("LOG_TEMP_MONITOR") for f in b["items"]), timeout=60)
        code = next(f["fault_code"] for f in faults["items"]
                    if f["fault_code"].startswith("LOG_TEMP_MONITOR"))
        rows = f'#events tr.event[data-code="{code}"]'

        def repeated(d: Any) -> list[str] | bool:
            kinds = [r.get_attribute("data-event") for r in d.find_elements(By.CSS_SELECTOR, rows)]
            counted = d.find_elements(By.CSS_SELECTOR, f"{rows}[data-count]")
            return kinds if counted and int(counted[0].get_attribute("data-count")) >= 3 else False
        kinds = browser.wait(repeated, "one row counting three updates of the fault", timeout=90)
        assert len(kinds) == len(set(kinds)), kinds  # one row per state, not per repeat
        assert "times since" in browser.text_of(f"{rows}[data-count] .repeat", "the count")
    finally:
        demo.request("PUT", "/apps/temp_monitor/configurations/overheat_threshold",
                     {"value": 110.0})


def test_graph_labels_do_not_overlap(browser: Browser, demo: Gateway) -> None:
    demo.wait_for("/functions/powertrain/x-vendor-graph", lambda b: b["x-vendor-graph"]["edges"],
                  timeout=60)
    browser.open(f"http://127.0.0.1:{demo.port}/#/e/functions/powertrain/graph")
    browser.css(".graph svg text.lab", "an edge label")
    boxes = browser.driver.execute_script("""
      const box = (el) => { const b = el.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; };
      const g = document.querySelector('.graph svg');
      return {labels: [...g.querySelectorAll(':scope > text.lab')].map(box),
              names: [...g.querySelectorAll('g.n > text')].map(box),
              nodes: [...g.querySelectorAll('g.n > rect')].map(box)};""")

    def overlap(a: list[float], b: list[float]) -> bool:
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    labels, nodes = boxes["labels"], boxes["nodes"]
    assert labels
    assert not [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:] if overlap(a, b)]
    assert not [(a, n) for a in labels for n in nodes if overlap(a, n)]
    # a node's name stays inside its box
    for name in boxes["names"]:
        assert any(n[0] <= name[0] and name[2] <= n[2] for n in nodes), name

