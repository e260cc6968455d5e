"""Service types the gateway lacks are built when discovery shows their server, before any
call (gateway/ros/calls/callbuild.py `prefetch`, setting `ros.type_build.on_discovery`).

The Jazzy server of tests/jazzy/test_jazzy_callbuild.py (nav_msgs GetMap and SetMap with
service introspection, LoadMap without) runs before the gateway starts; the gateway's venv
has no nav_msgs. No call is made until /health shows the built package served; the first
call then answers 200 within its normal budget.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.harness import Gateway, assert_error
from tests.jazzy.conftest import JAZZY_PYTHON
from tests.jazzy.test_jazzy_callbuild import op_path

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not JAZZY_PYTHON.exists(), reason="no Jazzy prefix at .jazzy (make jazzy)"),
]

# A build on the 2-core test machine under load took up to about 130 s.
BUILD_BUDGET_S = 300.0


def served_packages(gateway: Gateway) -> list[str]:
    """The interface packages /health says the gateway serves from elsewhere."""
    types = gateway.get("/health").json()["x-vendor-ros-types"]
    return list(types["interface_paths"]["packages"])


def test_discovery_builds_the_type_before_the_first_call(maps: Path, domain: int,
                                                         tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    with Gateway(free_port(), domain, [f"state_dir={tmp_path}"], log_path=log) as gw:
        deadline = time.monotonic() + BUILD_BUDGET_S
        while "nav_msgs" not in served_packages(gw):
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        text = log.read_text(errors="replace")
        assert "in the background" in text and "built in" in text, text[-3000:]
        # no retry: the first call of each introspected service answers at once
        resp = gw.request("POST", op_path(gw, "get_map"), {})
        assert resp.status == 200, resp
        assert resp.json()["parameters"]["map"]["data"] == [0, 100, -1]
        resp = gw.request("POST", op_path(gw, "set_map"), {"map": {"info": {"width": 2}}})
        assert resp.status == 200 and resp.json()["parameters"] == {"success": True}, resp
        # a server without introspection cannot be described: still the 501 with the reason
        body = assert_error(gw.request("POST", op_path(gw, "load_map"), {}), 501,
                            "vendor-error")
        assert "_service_event" in body["message"], body
    builds = [p for p in (tmp_path / "types").iterdir() if (p / "BUILT").is_file()]
    assert len(builds) == 1, builds


def test_with_the_setting_off_the_first_call_builds(maps: Path, domain: int,
                                                    tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    with Gateway(free_port(), domain, [f"state_dir={tmp_path}",
                                       "ros.type_build.on_discovery=false"],
                 log_path=log) as gw:
        path = op_path(gw, "get_map")
        # the graph unchanged for 10 s: with the setting on, a build would have started
        gw.wait_for("/health", lambda b: b["x-vendor-readiness"]["graph_idle"], timeout=120)
        assert "in the background" not in log.read_text(errors="replace")
        assert not (tmp_path / "types").exists() or not any((tmp_path / "types").iterdir())
        body = assert_error(gw.request("POST", path, {"timeout": 0.05}), 503, "vendor-error")
        assert body["vendor_code"] == "x-vendor-ros2-type-build-pending", body
