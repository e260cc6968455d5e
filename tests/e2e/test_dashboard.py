"""The dashboard in headless Chromium against the demo: tree, faults, recordings, operations,
parameters, data, logs and bulk data. Tests run in file order on one gateway and one browser."""

from __future__ import annotations

import http.client
import re
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.e2e.browser import Browser
from tests.e2e.conftest import DEMO_NODES
from tests.harness import Gateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]

def url(demo: Gateway, fragment: str = "") -> str:
    return f"http://127.0.0.1:{demo.port}/{fragment}"


def go(browser: Browser, demo: Gateway, fragment: str) -> None:
    """Navigate inside the page (hash route), loading it first if needed."""
    if not browser.driver.current_url.startswith(url(demo)):
        browser.open(url(demo))
    browser.driver.execute_script("location.hash = arguments[0]", fragment)


def wait_fault(demo: Gateway, code: str, with_recording: bool = False) -> None:
    def ready(body: dict) -> bool:
        snaps = body["environment_data"]["snapshots"]
        return bool(snaps) and (not with_recording or any(s["type"] == "rosbag" for s in snaps))
    demo.wait_for(f"/apps/lidar_sensor/faults/{code}", ready, timeout=60)


def test_page_loads_without_console_errors_and_tree_lists_demo_apps(
        browser: Browser, demo: Gateway) -> None:
    browser.open(url(demo))
    for app in DEMO_NODES:
        browser.css(f'#tree a[data-entity="apps/{app}"]', f"{app} in the tree")
    browser.css('.card.robot', "the robot card of the fleet view")
    assert browser.driver.title == "diag-gateway dashboard"
    assert browser.console_errors() == []
    # the console is really read: an error logged now is seen
    browser.driver.execute_script("console.error('probe from the test')")
    assert any("probe from the test" in e["message"] for e in browser.console_errors())


def test_fleet_view_lists_lidar_fault_with_severity_and_message(
        browser: Browser, demo: Gateway) -> None:
    wait_fault(demo, "LIDAR_RANGE_INVALID", with_recording=True)
    go(browser, demo, "#/fleet")
    # the fleet view redraws its fault table live: severity and message read from one row
    browser.texts_in('#fleet-faults tr[data-fault="LIDAR_RANGE_INVALID"]',
                     ("ERROR", "min_range (10.0) must be less than max_range (5.0)"))
    browser.text_in(".card.robot", "ERROR")
    browser.shot("fleet")


def test_fault_opens_with_freeze_frames_and_recording(browser: Browser, demo: Gateway) -> None:
    browser.click('#fleet-faults tr[data-fault="LIDAR_RANGE_INVALID"] a')  # the table redraws
    detail = browser.css('.fault-detail[data-fault="LIDAR_RANGE_INVALID"]', "the fault detail")
    assert "ERROR" in detail.text and "min_range (10.0)" in detail.text
    assert "#/e/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID" in browser.driver.current_url
    frame = browser.text_in("details.frame", "/perception/lidar/scan")
    assert "sensor_msgs/msg/LaserScan" in frame.text and '"ranges"' in frame.text
    rec = browser.css(".recording", "the recording")
    api = demo.get("/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID").json()
    bag = next(s for s in api["environment_data"]["snapshots"] if s["type"] == "rosbag")
    assert bag["name"] in rec.text
    assert rec.find_element(By.CSS_SELECTOR, ".size").get_attribute("data-bytes") == \
        str(bag["size_bytes"])
    pull = rec.find_element(By.CSS_SELECTOR, "code.pull").text
    assert pull == f"diag-gateway bag pull http://127.0.0.1:{demo.port}/api/v1" + \
        bag["bulk_data_uri"]
    browser.shot("fault")


def test_recording_downloads(browser: Browser, demo: Gateway) -> None:
    rec = browser.css(".recording")
    name = rec.get_attribute("data-recording")
    rec.find_element(By.CSS_SELECTOR, "button.download").click()
    browser.text_in(".recording .downloaded", "Downloaded")
    target = browser.downloads / name
    browser.wait(lambda d: target.exists() and not any(browser.downloads.glob("*.crdownload")),
                 f"{target} on disk")
    uri = rec.find_element(By.CSS_SELECTOR, "code.pull").text.split("/api/v1", 1)[1]
    expected = demo.get(uri).body
    assert target.read_bytes() == expected and expected[:5] == b"\x89MCAP"


def test_service_call_shows_the_response(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/calibration/operations")
    card = browser.css('.op[data-op="calibrate"]', "the calibrate service")
    card.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    result = browser.text_in('.op[data-op="calibrate"] .result', "engine calibrated with offset")
    assert '"success": true' in result.text


def test_action_shows_feedback_then_result(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/long_calibration/operations")
    card = browser.css('.op[data-op="long_calibration"]', "the action")
    order = card.find_element(By.CSS_SELECTOR, 'input[name="order"]')
    order.clear()
    order.send_keys("6")
    card.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser.text_in('.op[data-op="long_calibration"] .feedback', "feedback #")
    result = browser.text_in('.op[data-op="long_calibration"] .exec-result', "completed")
    sequence = result.find_element(By.CSS_SELECTOR, "pre").text
    assert [int(n) for n in re.findall(r"-?\d+", sequence)] == [0, 1, 1, 2, 3, 5, 8]
    status = card.find_element(By.CSS_SELECTOR, ".exec-status").text
    assert status.startswith("completed") and "SUCCEEDED" in status
    browser.shot("operations")


def test_action_cancel(browser: Browser, demo: Gateway) -> None:
    card = browser.css('.op[data-op="long_calibration"]')
    order = card.find_element(By.CSS_SELECTOR, 'input[name="order"]')
    order.clear()
    order.send_keys("40")
    card.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    cancel = browser.wait(lambda d: next((b for b in card.find_elements(
        By.CSS_SELECTOR, "button.danger") if b.is_enabled()), False), "the cancel button")
    cancel.click()
    browser.text_in('.op[data-op="long_calibration"] .exec-status', "CANCELED")
    browser.text_in('.op[data-op="long_calibration"] .exec-result', "failed")


def test_parameter_edit_round_trips(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/calibration/configurations")
    row = browser.css('tr[data-param="calibration_offset"]', "the parameter row")
    field = row.find_element(By.CSS_SELECTOR, 'input[name="value"]')
    field.clear()
    field.send_keys("2.5")
    row.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser.text_in('tr[data-param="calibration_offset"] .msg', "Saved: 2.5")
    assert demo.get("/apps/calibration/configurations/calibration_offset").json()["value"] == 2.5
    # the service reads the new value: the parameter really reached the node
    go(browser, demo, "#/e/apps/calibration/operations")
    browser.css('.op[data-op="calibrate"] button[type=submit]').click()
    browser.text_in('.op[data-op="calibrate"] .result', "offset 2.5")
    go(browser, demo, "#/e/apps/calibration/configurations")
    row = browser.css('tr[data-param="calibration_offset"]')
    field = row.find_element(By.CSS_SELECTOR, 'input[name="value"]')
    field.clear()
    field.send_keys("warm")
    row.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser.text_in('tr[data-param="calibration_offset"] .error', "'warm' is not a number")
    row.find_element(By.XPATH, ".//button[text()='Reset']").click()
    browser.text_in('tr[data-param="calibration_offset"] .msg', "Reset to 0")
    assert demo.get("/apps/calibration/configurations/calibration_offset").json()["value"] == 0.0


def test_data_values_live_with_sparklines_and_publish(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/temp_sensor/data")
    topic = '[data-topic="/powertrain/engine/temperature"]'
    value = browser.text_of(f'{topic} [data-field="temperature"]', "the temperature value")
    assert float(value) > 0
    # The values come through a cyclic subscription of the topic, read over SSE.
    browser.css('#panel .mode[data-mode="subscription"]', "the subscription mode")
    browser.css(f'{topic}[data-mode="sse"]', "the topic pushed over SSE")
    subs = demo.get("/apps/temp_sensor/cyclic-subscriptions").json()["items"]
    assert "/api/v1/apps/temp_sensor/data/powertrain/engine/temperature" in [
        s["observed_resource"] for s in subs]
    browser.wait(lambda d: spark_points(browser, topic) >= 4, "a sparkline of pushed values")
    browser.shot("data")
    browser.css(f"{topic} button").click()
    form = browser.css(f"{topic} form.publish", "the publish form")
    temp = form.find_element(By.CSS_SELECTOR, 'input[name="temperature"]')
    assert temp.get_attribute("step") == "any"
    sec = form.find_element(By.CSS_SELECTOR, 'input[name="header.stamp.sec"]')
    sec.clear()
    temp.clear()
    temp.send_keys("42.5")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser.text_in(f"{topic} form.publish .error", "header.stamp.sec: a number is required")
    sec.send_keys("7")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser.text_in(f"{topic} form.publish", "Published.")


def spark_points(browser: Browser, row: str) -> int:
    """Points of the first sparkline in a data row (0 while there is none)."""
    return int(browser.driver.execute_script(
        "const p = document.querySelector(arguments[0] + ' svg.spark polyline');"
        "return p ? p.getAttribute('points').split(' ').length : 0;", row))


def subscriptions(demo: Gateway, app: str) -> list[dict]:
    return demo.get(f"/apps/{app}/cyclic-subscriptions").json()["items"]


def test_data_subscriptions_end_when_the_panel_closes_or_the_page_unloads(
        browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/temp_sensor/data")
    browser.css('[data-topic="/powertrain/engine/temperature"][data-mode="sse"]', "a live topic")
    assert subscriptions(demo, "temp_sensor")
    go(browser, demo, "#/e/apps/temp_sensor/configurations")
    demo.wait_for("/apps/temp_sensor/cyclic-subscriptions", lambda b: b["items"] == [],
                  timeout=30)
    go(browser, demo, "#/e/apps/temp_sensor/data")
    browser.css('[data-topic="/powertrain/engine/temperature"][data-mode="sse"]', "a live topic")
    browser.open("about:blank")
    demo.wait_for("/apps/temp_sensor/cyclic-subscriptions", lambda b: b["items"] == [],
                  timeout=30)


def hold_sse_slots(demo: Gateway) -> list[http.client.HTTPConnection]:
    """Open fault streams until the gateway refuses one (503): every SSE slot is taken.

    First every stream of an earlier page must be gone (the gateway frees a slot when it sees
    the connection closed): a slot freed late would leave one open for the page."""
    demo.wait_for("/health", lambda b: b["x-vendor-sse"]["connected_clients"] == 0, timeout=30)
    held = []
    for _ in range(32):
        conn = http.client.HTTPConnection("127.0.0.1", demo.port, timeout=30)
        conn.request("GET", "/api/v1/faults/stream", headers={"Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status == 503:
            conn.close()
            return held
        assert resp.status == 200, resp.status
        held.append(conn)
    raise AssertionError("the gateway never refused a stream")


def test_data_falls_back_to_polling_when_sse_slots_are_full(browser: Browser,
                                                            demo: Gateway) -> None:
    go(browser, demo, "#/fleet")
    browser.open("about:blank")  # no stream of the page holds a slot
    held = hold_sse_slots(demo)
    try:
        go(browser, demo, "#/e/apps/temp_sensor/data")
        mode = browser.css('#panel .mode[data-mode="polling"]', "the polling mode")
        assert "503" in mode.text and "max_clients" in mode.text
        topic = '[data-topic="/powertrain/engine/temperature"]'
        browser.css(f'{topic}[data-mode="poll"]', "the topic polled")
        browser.wait(lambda d: spark_points(browser, topic) >= 3, "a sparkline of polled values")
        # the subscription whose stream was refused was deleted again
        assert subscriptions(demo, "temp_sensor") == []
        browser.shot("data-polling")
        go(browser, demo, "#/e/functions/powertrain/graph")
        mode = browser.css('#panel .mode[data-mode="polling"]', "the graph polled")
        assert "503" in mode.text
        browser.css(".graph svg g.n", "the graph drawn from polling")
        assert demo.get("/functions/powertrain/cyclic-subscriptions").json()["items"] == []
    finally:
        for conn in held:
            conn.close()
    go(browser, demo, "#/e/apps/temp_sensor/configurations")
    # The only console errors are the refused streams' 503s, logged by the browser itself.
    refused = browser.console_errors()
    assert refused and all("503" in e["message"] and "-page-stream" in e["message"]
                           for e in refused), refused


def test_logs_tail_with_severity_filter(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/lidar_sensor/logs")
    browser.css('tr.log[data-severity="info"]', "an info entry")
    Select(browser.css('select[name="severity"]')).select_by_value("error")

    def only_errors(d: object) -> bool:
        rows = browser.driver.find_elements(By.CSS_SELECTOR, "tr.log:not([hidden])")
        sev = {r.get_attribute("data-severity") for r in rows}
        return bool(rows) and sev <= {"error", "fatal"}

    browser.wait(only_errors, "only error entries")
    assert "LIDAR_RANGE_INVALID" in browser.css("tr.log").text


def test_bulk_data_upload_and_list(browser: Browser, demo: Gateway, tmp_path: Path) -> None:
    go(browser, demo, "#/e/apps/lidar_sensor/bulk-data")
    box = browser.css('.bulk[data-category="uploads"]', "the uploads category")
    browser.css('.bulk[data-category="rosbags"] tr[data-file]', "a recording")
    payload = tmp_path / "notes.txt"
    payload.write_bytes(b"lidar mount checked\n" * 1000)
    box.find_element(By.CSS_SELECTOR, 'input[type="file"]').send_keys(str(payload))
    box.find_element(By.CSS_SELECTOR, 'input[name="description"]').send_keys("mount check")
    box.find_element(By.CSS_SELECTOR, "form.upload button[type=submit]").click()
    row = browser.text_in('.bulk[data-category="uploads"] tr[data-file]', "notes.txt")
    assert "mount check" in row.text and "19.5 KiB" in row.text
    items = demo.get("/apps/lidar_sensor/bulk-data/uploads").json()["items"]
    assert [(i["name"], i["size"]) for i in items] == [("notes.txt", 20000)]
    browser.shot("bulk-data")


def test_no_console_errors_while_browsing(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/functions/perception")
    browser.css('.tabs a[data-tab="data"]', "the function's tabs")
    browser.css('.tabs a[data-tab="graph"]', "the graph tab (the graph plugin is loaded)")
    assert browser.console_errors() == []


def test_function_graph_of_the_demo(browser: Browser, demo: Gateway) -> None:
    # The powertrain function: temp_sensor publishes the temperature that temp_monitor reads.
    topic = "/powertrain/engine/temperature"

    def active(b: dict) -> bool:
        g = b["x-vendor-graph"]
        names = {t["topic_id"]: t["name"] for t in g["topics"]}
        return any(names[e["topic_id"]] == topic and e["metrics"]["metrics_status"] == "active"
                   for e in g["edges"])
    graph = demo.wait_for("/functions/powertrain/x-vendor-graph", active,
                          timeout=60)["x-vendor-graph"]
    go(browser, demo, "#/e/functions/powertrain/graph")
    browser.css('.tabs a.sel[data-tab="graph"]', "the graph tab")
    nodes = {n["entity_id"] for n in graph["nodes"]}
    assert {"temp_sensor", "temp_monitor"} <= nodes

    def drawn(d: object) -> dict | bool:
        got = browser.driver.execute_script("""
          const g = document.querySelector('.graph');
          if (!g) return null;
          return {nodes: [...g.querySelectorAll('g.n > text:first-of-type')].map((t) => t.textContent),
                  edges: [...g.querySelectorAll('path.e')].map((p) => p.getAttribute('class')),
                  labels: [...g.querySelectorAll('svg > text')].map((t) => t.getAttribute('data-full')),
                  status: g.querySelector('p strong').textContent};""")
        ok = got and set(got["nodes"]) >= {"temp_sensor", "temp_monitor"} and any(
            lab.startswith(topic + " ") and lab.endswith(" Hz") for lab in got["labels"])
        return got if ok else False
    got = browser.wait(drawn, "the powertrain graph with the temperature edge and its rate")
    assert len(got["edges"]) == len(graph["edges"]) > 0
    assert "path e active" in [" ".join(["path", *c.split()]) for c in got["edges"]]
    assert got["status"] in ("healthy", "degraded", "broken")
    status_now = demo.get("/functions/powertrain/x-vendor-graph").json()["x-vendor-graph"]
    assert got["status"] in (graph["pipeline_status"], status_now["pipeline_status"])
    # pushed by a cyclic subscription of the graph, which ends with the tab
    browser.css('#panel .mode[data-mode="subscription"]', "the subscription mode")
    subs = demo.get("/functions/powertrain/cyclic-subscriptions").json()["items"]
    assert [s["observed_resource"] for s in subs] == ["/api/v1/functions/powertrain/x-vendor-graph"]
    browser.shot("graph")
    go(browser, demo, "#/e/functions/powertrain/faults")
    demo.wait_for("/functions/powertrain/cyclic-subscriptions", lambda b: b["items"] == [],
                  timeout=30)
    assert browser.console_errors() == []


def test_api_errors_show_their_message(browser: Browser, demo: Gateway) -> None:
    go(browser, demo, "#/e/apps/lidar_sensor/faults/NO_SUCH_FAULT")
    err = browser.css("#panel .error", "the error box")
    assert "404" in err.text and "NO_SUCH_FAULT" in err.text and "not found" in err.text
    go(browser, demo, "#/e/apps/no_such_app")
    err = browser.css("#main .error", "the error box")
    assert "404" in err.text and "no_such_app" in err.text


def test_event_stream_parser_in_the_page(browser: Browser, demo: Gateway) -> None:
    # Chunks split anywhere, CRLF line ends, comments and multi-line data (the SSE format).
    go(browser, demo, "#/fleet")
    browser.driver.set_script_timeout(30)
    got = browser.driver.execute_async_script("""
      const done = arguments[arguments.length - 1];
      import('/dashboard/js/sse.js').then(({parseEvents}) => {
        const text = ':connected\\r\\n\\r\\nid: 7\\nevent: fault_confirmed\\ndata: {"a":\\ndata: 1}\\n\\nid: 8\\nda';
        const first = parseEvents(text);
        const second = parseEvents(first.rest + 'ta: {}\\n\\n');
        const split = parseEvents('id: 9\\r\\ndata: x\\r');  // CRLF cut between chunks
        const joined = parseEvents(split.rest + '\\n\\r\\n');
        done([first.events, second.events, second.rest, split.events, joined.events]);
      }, (e) => done(String(e)));""")
    assert got == [[{"id": "7", "event": "fault_confirmed", "data": '{"a":\n1}'}],
                   [{"id": "8", "event": "message", "data": "{}"}], "", [],
                   [{"id": "9", "event": "message", "data": "x"}]]


def test_function_graph_drawing_in_the_page(browser: Browser, demo: Gateway) -> None:
    # The layout on a snapshot of the spec's shape: a chain scan -> filter -> planner, a stale
    # edge and an unreachable node (the demo's graph is checked above).
    go(browser, demo, "#/fleet")
    browser.driver.set_script_timeout(30)
    got = browser.driver.execute_async_script("""
      const done = arguments[arguments.length - 1];
      import('/dashboard/js/graph.js').then(({drawGraph, layers}) => {
        const g = {schema_version: '1.0.0', pipeline_status: 'degraded', bottleneck_edge: 'edge-1',
          topics: [{topic_id: 'topic-0', name: '/scan'}, {topic_id: 'topic-1', name: '/points'}],
          nodes: [{entity_id: 'planner', node_status: 'reachable'},
                  {entity_id: 'lidar', node_status: 'reachable'},
                  {entity_id: 'filter', node_status: 'unreachable'}],
          edges: [{edge_id: 'edge-0', source: 'lidar', target: 'filter', topic_id: 'topic-0',
                   metrics: {frequency_hz: 10, metrics_status: 'active'}},
                  {edge_id: 'edge-1', source: 'filter', target: 'planner', topic_id: 'topic-1',
                   metrics: {frequency_hz: null, metrics_status: 'error'}}]};
        const el = document.createElement('div');
        drawGraph(el, g);
        const col = layers(g.nodes.map((n) => n.entity_id), g.edges);
        done({cols: Object.fromEntries(col), rects: el.querySelectorAll('rect').length,
              errors: el.querySelectorAll('path.e.error').length,
              down: [...el.querySelectorAll('g.n.unreachable text')].map((t) => t.textContent)[0],
              text: el.textContent});
      }, (e) => done(String(e)));""")
    assert got["cols"] == {"lidar": 0, "filter": 1, "planner": 2}
    assert got["rects"] == 3 and got["errors"] == 1 and got["down"] == "filter"
    assert "degraded" in got["text"] and "/scan 10.0 Hz" in got["text"]


def test_event_stream_resumes_with_last_event_id(browser: Browser, demo: Gateway) -> None:
    # A stream that ends is opened again with the last id seen, so nothing is missed.
    go(browser, demo, "#/fleet")
    browser.driver.set_script_timeout(60)
    got = browser.driver.execute_async_script("""
      const done = arguments[arguments.length - 1];
      import('/dashboard/js/sse.js').then(({follow}) => {
        const real = window.fetch, calls = [], seen = [];
        window.fetch = async (url, opts) => {
          if (!String(url).endsWith('/test-stream')) return real(url, opts);  // the page's own
          calls.push(opts.headers['Last-Event-ID'] || null);
          const id = calls.length * 10;
          const body = new Blob([`id: ${id}\\nevent: fault_confirmed\\ndata: {"n":${id}}\\n\\n`]).stream();
          return new Response(body, {status: 200, headers: {'Content-Type': 'text/event-stream'}});
        };
        const s = follow('/test-stream', (ev) => {
          seen.push(ev.id);
          if (seen.length === 3) { s.close(); window.fetch = real; done({calls, seen}); }
        }, () => {}, '4');
      }, (e) => done(String(e)));""")
    assert got == {"calls": ["4", "10", "20"], "seen": ["10", "20", "30"]}


def test_manifest_tree_nests_subareas_and_subcomponents(browser: Browser, demo: Gateway) -> None:
    # The demo runs without a manifest; the tree is checked on a manifest-shaped model.
    go(browser, demo, "#/fleet")
    browser.driver.set_script_timeout(30)
    got = browser.driver.execute_async_script("""
      const done = arguments[arguments.length - 1];
      import('/dashboard/js/tree.js').then(({drawTree}) => {
        const e = (id, extra) => ({id, name: id, ...(extra || {})});
        const m = {
          areas: [e('vehicle'), e('powertrain')], components: [e('ecu'), e('sensor_board'), e('spare')],
          apps: [e('engine'), e('temp', {'x-vendor': {available: false}}), e('orphan')],
          functions: [e('cooling')],
          subAreas: {vehicle: ['powertrain'], powertrain: []}, areaComps: {vehicle: [], powertrain: ['ecu']},
          subComps: {ecu: ['sensor_board'], sensor_board: [], spare: []},
          hosts: {ecu: ['engine'], sensor_board: ['temp'], spare: []}, fnHosts: {cooling: ['engine', 'temp']}};
        const el = document.createElement('div');
        drawTree(el, m);
        const path = (sel) => { const out = []; let n = el.querySelector(sel).closest('li');
          while (n) { out.unshift(n.firstElementChild.dataset.entity); n = n.parentElement.closest('li'); }
          return out; };
        done({temp: path('a[data-entity="apps/temp"]'), spare: path('a[data-entity="components/spare"]'),
              orphan: path('a[data-entity="apps/orphan"]'),
              grey: [...el.querySelectorAll('li.unavailable > a')].map((a) => a.dataset.entity),
              sections: [...el.querySelectorAll('li.sec')].map((s) => s.textContent)});
      }, (e) => done(String(e)));""")
    assert got["temp"] == ["areas/vehicle", "areas/powertrain", "components/ecu",
                           "components/sensor_board", "apps/temp"]
    assert got["spare"] == ["components/spare"] and got["orphan"] == ["apps/orphan"]
    assert got["grey"] == ["apps/temp", "apps/temp"]  # under its component and its function
    assert got["sections"] == ["Areas", "Components", "Apps", "Functions"]
