"""The dashboard's pure JS logic (event coalescing, passed faults, sources, label placement),
run by node on the shipped ES modules."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from gateway.dashboard.assets import STATIC_DIR

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def run_js(imports: str, body: str) -> Any:
    """Run an ES module with the given imports (names from js/<module>) and print(JSON)."""
    lines = []
    for spec in imports.split(";"):
        names, module = spec.split(" from ")
        lines.append(f"import {{{names.strip()}}} from "
                     f"{json.dumps((STATIC_DIR / 'js' / module.strip()).as_uri())};")
    script = "\n".join([*lines, f"console.log(JSON.stringify((() => {{ {body} }})()));"])
    out = subprocess.run([str(NODE), "--input-type=module", "-e", script], capture_output=True,
                         text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def event(at: int, code: str, kind: str = "fault_updated", status: str = "CONFIRMED",
          message: str = "", peer: str = "") -> dict[str, Any]:
    return {"at": at, "id": str(at), "type": "fault", "data": {
        "event_type": kind, "fault": {"fault_code": code, "status": status, "message": message},
        "x-vendor": {"peer": peer}}}


def test_repeats_of_a_faults_state_are_one_row_with_a_count() -> None:
    events = [event(1, "A", message="took 1 ms"), event(2, "A", message="took 2 ms"),
              event(3, "B"), event(4, "A", message="took 4 ms"),
              event(5, "A", kind="fault_cleared", status="CLEARED"),
              event(6, "A", peer="robot2")]
    got = run_js("addEvent from eventlog.js",
                 f"const ev = []; for (const e of {json.dumps(events)}) addEvent(ev, e); return ev;")
    rows = [(e["data"]["fault"]["fault_code"], e["data"]["event_type"], e.get("count", 1),
             e["at"]) for e in got]
    # A's repeats (a number in the message moved) share one row: B's arrival in between
    # does not split them; a real change (cleared) and another robot's A are rows of their own
    assert rows == [("B", "fault_updated", 1, 3), ("A", "fault_updated", 3, 4),
                    ("A", "fault_cleared", 1, 5), ("A", "fault_updated", 1, 6)]
    assert got[1]["first"] == 1 and got[1]["data"]["fault"]["message"] == "took 4 ms"


def test_the_event_log_keeps_its_newest_500() -> None:
    got = run_js("addEvent from eventlog.js", """
      const ev = []; const gone = [];
      for (let i = 0; i < 510; i++) {
        const g = addEvent(ev, {at: i, id: String(i), type: 'fault', data: {event_type: 'fault_confirmed', fault: {fault_code: 'C' + i}}});
        if (g) gone.push(g.id);
      }
      return [ev.length, gone.length, gone[0]];""")
    assert got == [500, 10, "0"]


@pytest.mark.parametrize(("fault", "passed"), [
    ({"status": "CONFIRMED", "last_occurred": 100.0}, False),
    ({"status": "CONFIRMED", "last_occurred": 100.0, "last_passed": 160.0}, True),
    ({"status": "CONFIRMED", "last_occurred": 170.0, "last_passed": 160.0}, False),
    ({"status": "HEALED"}, True),
    ({"status": "PREPASSED"}, True),
    ({"severity": "ERROR", "timestamp": "2026-01-01T10:00:00Z",
      "x-vendor": {"status": "CONFIRMED", "last_passed": "2026-01-01T10:17:00Z"}}, True),
    ({"severity": "ERROR", "timestamp": "2026-01-01T10:20:00Z",
      "x-vendor": {"status": "CONFIRMED", "last_passed": "2026-01-01T10:17:00Z"}}, False),
])
def test_a_fault_whose_condition_passed_is_passed(fault: dict[str, Any], passed: bool) -> None:
    assert run_js("isPassed from faultshape.js",
                  f"return isPassed({json.dumps(fault)});") is passed


def test_sources_are_readable() -> None:
    got = run_js("sourceOf from faultshape.js", """return [
      sourceOf({source: '/x-plugin/graph_watchdog/functions/powertrain'}),
      sourceOf({source: '/x-plugin/graph_watchdog/apps/graph_watchdog'}),
      sourceOf({source: '/perception/lidar/lidar_sensor'}),
      sourceOf({reporting_sources: ['/x-plugin/updates/apps/ota']}),
      sourceOf({})];""")
    assert got == ["powertrain (graph_watchdog plugin)", "graph_watchdog plugin",
                   "/perception/lidar/lidar_sensor",
                   "ota (updates plugin)", ""]


def test_labels_never_overlap_and_are_cut_to_their_room() -> None:
    got = run_js("ellipsize, placeLabels from labels.js", """
      const labels = [{x: 100, y: 50, text: 'aaaa'}, {x: 102, y: 50, text: 'bbbb'},
                      {x: 98, y: 50, text: 'cccc'}, {x: 100, y: 52, text: 'dddd'},
                      {x: 100, y: 50, text: 'eeee'}, {x: 100, y: 50, text: 'ffff'},
                      {x: 400, y: 50, text: 'far away'}];
      const box = {x0: 90, y0: 70, x1: 200, y1: 120};  // a node box below
      return {ys: placeLabels(labels, [box], 7, 14),
              cut: [ellipsize('/powertrain/engine/temperature', 70, 7), ellipsize('short', 70, 7), ellipsize('abc', 7, 7)]};""")
    ys = got["ys"]
    placed = [y for y in ys[:6] if y is not None]
    # each placed label is at least a line apart from the others; one that finds no room
    # (and one that would cover the box) is left out; a label elsewhere keeps its place
    assert all(abs(a - b) >= 14 for i, a in enumerate(placed) for b in placed[i + 1:])
    assert all(y + 2 <= 70 or y - 12 >= 120 for y in placed)
    assert None in ys[:6] and ys[6] == 50
    assert got["cut"] == ["/powertra…", "short", ""]  # 10 characters of room


def test_the_plot_axis_makes_room_for_its_widest_tick_label() -> None:
    narrow, wide = run_js("axisSize from plot.js",
                          "return [axisSize(null, ['1', '2']), axisSize(null, ['1,234,567.5', '2'])];")
    assert wide - narrow >= 8 * 6  # eight more characters, at least 6 px each
