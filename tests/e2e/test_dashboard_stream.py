"""The dashboard's one stream per page and its live panels: one SSE slot per page whatever it
watches, values updated in place (an open message stays open, a selection stays), and the
fault views under the medkit wire profile."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from gateway.demo.robot import Robot
from tests.conftest import _domains
from tests.e2e.browser import Browser
from tests.e2e.conftest import start_gateway
from tests.e2e.test_dashboard import go, spark_points
from tests.harness import Gateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]

TOPIC = '[data-topic="/powertrain/engine/temperature"]'


def sse_clients(gw: Gateway) -> int:
    """Open SSE streams of the gateway (its /health figure)."""
    body = gw.get("/health").json()
    return int(body["x-vendor-sse"]["connected_clients"])


def test_a_data_tab_holds_one_stream_for_all_its_topics(browser: Browser, demo: Gateway) -> None:
    comp = demo.get("/components").json()["items"][0]["id"]
    topics = [t["id"] for t in demo.get(f"/components/{comp}/data").json()["items"]]
    assert len(topics) >= 3, topics
    go(browser, demo, f"#/e/components/{comp}/data")
    browser.css('#panel .mode[data-mode="subscription"]', "every topic pushed")
    live = browser.driver.find_elements(By.CSS_SELECTOR, 'tr[data-topic][data-mode="sse"]')
    assert len(live) == min(len(topics), 24)
    # every watched topic is a cyclic subscription of the gateway, all over one stream
    subs = demo.get(f"/components/{comp}/cyclic-subscriptions").json()["items"]
    assert len(subs) == len(live)
    demo.wait_for("/health", lambda b: b["x-vendor-sse"]["connected_clients"] == 1, timeout=30)
    # with the spec's default of 2 streams, another client still gets one
    conn = http.client.HTTPConnection("127.0.0.1", demo.port, timeout=30)
    try:
        conn.request("GET", "/api/v1/faults/stream", headers={"Accept": "text/event-stream"})
        assert conn.getresponse().status == 200
        assert sse_clients(demo) == 2
    finally:
        conn.close()
    go(browser, demo, "#/e/apps/temp_sensor/configurations")
    demo.wait_for(f"/components/{comp}/cyclic-subscriptions", lambda b: b["items"] == [],
                  timeout=30)


def test_an_open_message_and_a_selection_survive_live_updates(browser: Browser,
                                                              demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/temp_sensor/data")
    browser.css(f'{TOPIC}[data-mode="sse"]', "the topic pushed")
    browser.click(f"{TOPIC} details summary", "the message toggle")
    pre = browser.css(f"{TOPIC} details[open] pre", "the open message")
    # select the value's text, as a person copying it would
    selected = browser.driver.execute_script(
        "const el = document.querySelector(arguments[0]);"
        "const r = document.createRange(); r.selectNodeContents(el);"
        "const s = getSelection(); s.removeAllRanges(); s.addRange(r); return s.toString();",
        f"{TOPIC} [data-field='temperature']")
    assert selected
    start = spark_points(browser, TOPIC)
    # values keep arriving (the history grows) while the person reads
    browser.wait(lambda d: spark_points(browser, TOPIC) >= min(start + 4, 60),
                 "four more pushed values")
    assert browser.driver.execute_script("return getSelection().toString()") == selected
    browser.driver.execute_script("getSelection().removeAllRanges()")
    browser.wait(lambda d: spark_points(browser, TOPIC) >= min(start + 6, 60), "more values")
    assert pre.is_displayed()  # the same element, still open: never redrawn away
    assert browser.driver.find_elements(By.CSS_SELECTOR, f"{TOPIC} details[open]")
    browser.wait(lambda d: pre.text != json.dumps({}), "the message text")


@pytest.fixture(scope="module")
def medkit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The lidar demo node (it raises faults at start) behind a gateway in the medkit profile."""
    logs: Path = tmp_path_factory.mktemp("dash-medkit")
    dom = next(_domains)
    with Robot.start(dom, nodes=("lidar_sensor",), log_dir=logs / "robot"):
        gw = start_gateway(dom, logs, "medkit", ["api.profile=medkit"])
        try:
            gw.wait_for("/faults", lambda b: any(f["fault_code"] == "LIDAR_RANGE_INVALID"
                                                 for f in b["items"]), timeout=60)
            yield gw
        finally:
            gw.stop()


def test_medkit_profile_fleet_counts_badges_and_times(browser: Browser, medkit: Gateway) -> None:
    faults = medkit.get("/faults").json()["items"]
    confirmed = [f for f in faults if f["status"] == "CONFIRMED"]
    assert confirmed and isinstance(confirmed[0]["severity"], int)  # medkit's shape
    browser.open(f"http://127.0.0.1:{medkit.port}/#/fleet")

    def counts_match(d: object) -> bool:  # faults from the node's log may still arrive
        errors = sum(1 for f in medkit.get("/faults").json()["items"]  # active ones
                     if f["status"] == "CONFIRMED" and f["severity_label"] == "ERROR"
                     and not f.get("last_passed", 0) >= f["last_occurred"])
        shown = d.find_elements(By.CSS_SELECTOR,  # type: ignore[attr-defined]
                                '.card.robot .num[data-sev="ERROR"]')
        return bool(shown) and shown[0].text == str(errors)

    browser.wait(counts_match, "the card's count of confirmed ERROR faults")
    card = browser.text_of(".card.robot", "the robot card")
    assert "no confirmed faults" not in card
    badge = browser.text_of('#fleet-faults tr[data-fault="LIDAR_RANGE_INVALID"] .sev',
                            "the fault's severity badge")
    assert badge == "ERROR"
    # the timeline's times are the events' times (epoch seconds in this profile), not 1970
    browser.css("#events tr.event", "a timeline event")
    now = datetime.now()
    for text in browser.read_all("#events tr.event td:first-child"):
        shown = datetime.strptime(text, "%I:%M:%S %p").replace(
            year=now.year, month=now.month, day=now.day)
        assert abs(shown - now) < timedelta(minutes=15) or abs(shown - now) > timedelta(hours=23)
    browser.shot("medkit-fleet")


def test_a_dead_gateway_is_not_shown_online(browser: Browser, medkit: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{medkit.port}/#/fleet")
    card = browser.text_of('.card.robot[data-robot="this gateway"]', "the gateway's card")
    assert "online" in card  # named after the gateway, not after a component
    medkit.stop()
    # the next read fails at once (connection refused): within two reads the card says so
    gone = browser.text_in(".card.robot.unreachable", "not answering", timeout=10).text
    assert "online" not in gone and "ERROR" not in gone  # no old counts
    assert "the stream is down" in browser.text_of("#stream-behind", "the timeline's note")
    browser.shot("gateway-down")


def test_every_polled_row_is_marked_polled(browser: Browser, demo: Gateway) -> None:
    from tests.e2e.test_dashboard import hold_sse_slots

    comp = demo.get("/components").json()["items"][0]["id"]
    browser.open("about:blank")  # no stream of the page holds a slot
    demo.wait_for("/health", lambda b: b["x-vendor-sse"]["connected_clients"] == 0, timeout=30)
    held = hold_sse_slots(demo)
    try:
        go(browser, demo, f"#/e/components/{comp}/data")
        browser.css('#panel .mode[data-mode="polling"]', "the polling mode")
        modes = browser.read_all("tr[data-topic]", "data-mode")  # read at once: rows redraw
        assert len(modes) >= 3 and set(modes[:24]) == {"poll"}, modes
        pills = browser.read_all("tr[data-topic] .pill")
        assert len(pills) == len(modes) and set(pills[:24]) == {"polled"}, pills
    finally:
        for conn in held:
            conn.close()


def test_passed_faults_look_passed_in_the_page(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/fleet")
    browser.driver.set_script_timeout(30)
    got = browser.driver.execute_async_script("""
      const done = arguments[arguments.length - 1];
      import('/dashboard/js/fleet.js').then(({drawFaults}) => {
        const el = document.createElement('div');
        const f = (code, status) => ({fault_code: code, severity: 'ERROR', message: code,
          timestamp: '2026-01-01T00:00:00Z', source: '/n', 'x-vendor': {status}});
        drawFaults(el, [f('HEALED_ONE', 'HEALED'), f('ACTIVE_ONE', 'CONFIRMED'),
                        f('PASSING_ONE', 'PREPASSED')]);
        done([...el.querySelectorAll('tr[data-fault]')].map((tr) => [tr.dataset.fault,
          tr.classList.contains('passed'), tr.querySelector('.pill').textContent]));
      }, (e) => done(String(e)));""")
    assert got == [["ACTIVE_ONE", False, "confirmed"],
                   ["HEALED_ONE", True, "passed (healed)"],
                   ["PASSING_ONE", True, "passed (prepassed)"]]


def test_logs_search_and_a_selection_survive_the_live_tail(browser: Browser,
                                                           demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/lidar_sensor/logs")
    browser.css("tr.log:not([hidden])", "a log entry")
    cell = "tr.log:not([hidden]) td:last-child"
    selected = browser.driver.execute_script(
        "const el = document.querySelector(arguments[0]);"
        "const r = document.createRange(); r.selectNodeContents(el);"
        "const s = getSelection(); s.removeAllRanges(); s.addRange(r); return s.toString();",
        cell)
    assert selected
    total = len(browser.driver.find_elements(By.CSS_SELECTOR, "tr.log"))
    # the lidar logs its complaints every few seconds: new entries arrive meanwhile
    browser.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.log")) > total,
                 "new log entries")
    assert browser.driver.execute_script("return getSelection().toString()") == selected
    search = browser.css('input[name="search"]', "the search box")
    search.send_keys("scan_frequency")

    def only_matches(d: object) -> bool:
        rows = d.find_elements(By.CSS_SELECTOR, "tr.log:not([hidden])")  # type: ignore[attr-defined]
        return bool(rows) and all("scan_frequency" in r.text for r in rows)

    browser.wait(only_matches, "only entries that match the search")


def test_fleet_faults_filter_search_and_group(browser: Browser, demo: Gateway) -> None:
    from selenium.webdriver.support.ui import Select

    go(browser, demo, "#/fleet")
    browser.css('#fleet-faults tr[data-fault="LIDAR_RANGE_INVALID"]', "the lidar fault")

    def rows(d: object) -> list[str]:
        return [r.text for r in d.find_elements(  # type: ignore[attr-defined]
            By.CSS_SELECTOR, "#fleet-faults tr[data-fault]")]

    Select(browser.css('select[name="f-severity"]')).select_by_value("WARN")
    browser.wait(lambda d: rows(d) and all(r.startswith("WARN") for r in rows(d)),
                 "only WARN faults")
    Select(browser.css('select[name="f-severity"]')).select_by_value("")
    browser.css('input[name="f-text"]').send_keys("min_range")
    browser.wait(lambda d: rows(d) and all("min_range" in r for r in rows(d)),
                 "only faults matching the search")
    browser.text_in("#fleet-faults .filtered", "faults match the filters")
    browser.css('input[name="f-text"]').clear()
    browser.driver.execute_script(
        "const i = document.querySelector('input[name=f-text]');"
        "i.value = ''; i.dispatchEvent(new Event('input'));")
    browser.click('input[name="f-group"]')
    group = browser.css('#fleet-faults tr.group[data-code="LIDAR_RANGE_INVALID"]', "a group")
    assert group.get_attribute("data-robots") == "1"
    browser.click('input[name="f-group"]')
    # grouping joins one code across robots (checked in the page on two robots' faults)
    got = browser.driver.execute_async_script("""
      const done = arguments[arguments.length - 1];
      import('/dashboard/js/faultfilter.js').then(({groupByCode}) => {
        const f = (peer, sev, st) => ({fault_code: 'X', severity: sev, message: 'm',
          timestamp: '2026-01-01T00:00:00Z', 'x-vendor': {peer, status: st}});
        const g = groupByCode([f('r1', 'WARN', 'CONFIRMED'), f('r2', 'ERROR', 'HEALED'),
                               f('r3', 'INFO', 'CONFIRMED')]);
        done(g.map((x) => [x.code, [...x.robots].sort(), x.worst, x.active, x.passed]));
      }, (e) => done(String(e)));""")
    assert got == [["X", ["r1", "r2", "r3"], 1, 2, 1]]
    browser.shot("fleet-filters")


def test_fields_plot_on_one_chart_with_units_hover_and_zoom(browser: Browser,
                                                            demo: Gateway) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    go(browser, demo, "#/e/apps/temp_sensor/data")
    browser.css(f'{TOPIC}[data-mode="sse"]', "the topic pushed")
    browser.click(f'{TOPIC} [data-plot="temperature"]', "the temperature field")
    browser.click(f'{TOPIC} [data-plot="variance"]', "the variance field")
    browser.css(".plot .uplot canvas", "the chart")
    labels = [e.text for e in browser.driver.find_elements(
        By.CSS_SELECTOR, ".plot .u-legend .u-series .u-label")]
    assert "temperature temperature [°C]" in labels and "temperature variance" in labels
    assert browser.driver.find_elements(By.CSS_SELECTOR, ".plot .u-axis")  # axes drawn

    # hover: the legend shows the values under the cursor
    over = browser.css(".plot .u-over", "the chart's plot area")
    browser.wait(lambda d: (ActionChains(d).move_to_element_with_offset(over, 10, 5)
                            .move_to_element(over).perform() or True) and any(
        v.text not in ("", "--") for v in d.find_elements(
            By.CSS_SELECTOR, ".plot .u-legend .u-series:nth-child(2) .u-value")),
        "a value under the cursor")
    # zoom with the wheel: the chart stops following, a button brings it back
    browser.driver.execute_script(
        "const o = document.querySelector('.plot .u-over');"
        "o.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: o.getBoundingClientRect().x + 50,"
        " clientY: o.getBoundingClientRect().y + 20, bubbles: true, cancelable: true}));")
    follow = browser.css(".plot button.follow", "the follow-live button")
    browser.driver.execute_script("arguments[0].click()", follow)
    browser.wait(lambda d: not follow.is_displayed(), "following live again")
    browser.shot("data-plot")
    browser.click(f'{TOPIC} [data-plot="temperature"]', "the temperature field again")
    browser.click(f'{TOPIC} [data-plot="variance"]', "the variance field again")
    browser.wait(lambda d: not d.find_element(By.CSS_SELECTOR, ".plot").is_displayed(),
                 "the chart gone with its last field")


def test_dark_theme_follows_the_system_and_the_switch(browser: Browser, demo: Gateway) -> None:
    d = browser.driver
    d.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        browser.open(f"http://127.0.0.1:{demo.port}/#/fleet")
        browser.css('#fleet-faults tr[data-fault="LIDAR_RANGE_INVALID"]', "the fault list")
        bg = "return getComputedStyle(document.body).backgroundColor"
        assert d.execute_script("return document.documentElement.dataset.theme") == "dark"
        assert d.execute_script(bg) == "rgb(13, 17, 23)"
        browser.shot("dark")
        browser.click("#theme-btn", "the theme switch")
        browser.wait(lambda _: d.execute_script(bg) == "rgb(246, 247, 249)", "the light theme")
    finally:
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_the_layout_works_at_800_px(browser: Browser, demo: Gateway) -> None:
    d = browser.driver
    d.set_window_size(800, 900)
    try:
        for fragment, ready in (("#/fleet", '#fleet-faults tr[data-fault]'),
                                ("#/e/apps/lidar_sensor/data", "tr[data-topic] .leaf"),
                                ("#/e/functions/powertrain/graph", ".graph svg")):
            go(browser, demo, fragment)
            browser.css(ready, f"{fragment} drawn")
            width = d.execute_script("return window.innerWidth")
            assert d.execute_script("return document.documentElement.scrollWidth") <= width
            # the page uses the width: the tree is above it, not beside it
            assert d.execute_script("return document.getElementById('main').offsetWidth") > 700
        browser.shot("narrow")
    finally:
        d.set_window_size(1400, 1000)


def test_locks_view_acquire_extend_and_release(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/temp_sensor/locks")
    browser.css('[data-locks="0"]', "not locked")
    scopes = browser.css('select[name="scopes"]', "the scopes")
    browser.driver.execute_script(
        "[...arguments[0].options].forEach((o) => { o.selected = o.value === 'configurations'; })",
        scopes)
    browser.click(".lock-form button[type=submit]", "acquire")
    row = browser.text_in("tr.lock", "this page")
    assert "configurations" in row.text and "(in " in row.text
    lock = demo.get("/apps/temp_sensor/locks").json()["items"]
    assert len(lock) == 1 and lock[0]["scopes"] == ["configurations"]
    first = lock[0]["lock_expiration"]
    browser.click("tr.lock button.extend", "extend")
    demo.wait_for("/apps/temp_sensor/locks",
                  lambda b: b["items"] and b["items"][0]["lock_expiration"] != first, timeout=30)
    # another client sees the lock as someone else's
    assert demo.get("/apps/temp_sensor/locks").json()["items"][0]["owned"] is False
    browser.shot("locks")
    browser.click("tr.lock button.release", "release")
    browser.css('[data-locks="0"]', "not locked again")
    assert demo.get("/apps/temp_sensor/locks").json()["items"] == []


def test_subscriptions_and_triggers_view_lists_and_deletes(browser: Browser,
                                                           demo: Gateway) -> None:
    resource = "/api/v1/apps/temp_sensor/data/powertrain/engine/temperature"
    sub = demo.request("POST", "/apps/temp_sensor/cyclic-subscriptions", {
        "resource": resource, "interval": "slow", "duration": 300})
    assert sub.status == 201, sub
    trig = demo.request("POST", "/apps/temp_sensor/triggers", {
        "resource": resource, "path": "/temperature", "multishot": True,
        "trigger_condition": {"condition_type": "OnChange"}})
    assert trig.status == 201, trig
    sub_id, trig_id = sub.json()["id"], trig.json()["id"]
    go(browser, demo, "#/e/apps/temp_sensor/cyclic-subscriptions")
    row = browser.css(f'tr.sub[data-sub="{sub_id}"]', "the subscription")
    assert resource in row.text and "slow" in row.text
    trow = browser.css(f'tr.trigger[data-trigger="{trig_id}"]', "the trigger")
    assert "OnChange" in trow.text and "/temperature" in trow.text
    browser.shot("subscriptions")
    browser.click(f'tr.sub[data-sub="{sub_id}"] button.danger', "delete the subscription")
    browser.click(f'tr.trigger[data-trigger="{trig_id}"] button.danger', "delete the trigger")
    demo.wait_for("/apps/temp_sensor/cyclic-subscriptions", lambda b: b["items"] == [],
                  timeout=30)
    demo.wait_for("/apps/temp_sensor/triggers", lambda b: b["items"] == [], timeout=30)


def test_the_timeline_has_time_labels(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/fleet")
    labels = browser.wait(lambda d: [s.text for s in d.find_elements(
        By.CSS_SELECTOR, "#timeline-axis span")] or False, "the timeline's time labels")
    assert labels[0] == "now" and len(labels) == 6
    ten_ago = (datetime.now() - timedelta(minutes=10))
    assert labels[-1] in (ten_ago.strftime("%I:%M %p"), ten_ago.strftime("%I:%M %p").lstrip("0"),
                          (ten_ago - timedelta(minutes=1)).strftime("%I:%M %p"))
