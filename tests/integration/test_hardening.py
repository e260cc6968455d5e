"""Hardening against a real gateway and robot: ranges, download headers, body limits, 405/HEAD,
501 item routes, client log flooding, readiness and a bounded stop."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.harness import Gateway, Response, assert_error
from tests.integration.test_bulk_data import upload

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor", "calibration", "unresponsive_param")
MIB = 1 << 20
LOG_LINES_PER_MINUTE = 5


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("harden") / "state"


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, state_dir: Path) -> Iterator[Gateway]:
    settings = [f"state_dir={state_dir}", "bulk_data.categories=[calib]",
                f"server.client_error_log_per_minute={LOG_LINES_PER_MINUTE}"]
    with Gateway(free_port(), domain, settings, state_dir.parent / "gateway.log") as g:
        g.wait_for("/apps", lambda b: {"temp_sensor", "calibration"} <= {
            i["id"] for i in b["items"]}, timeout=30)
        yield g


def log_text(gw: Gateway) -> str:
    assert gw.log_path is not None
    return gw.log_path.read_text(errors="replace")


# 1 and 4: downloads ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_upload(gw: Gateway) -> tuple[str, bytes]:
    data = os.urandom(MIB)
    resp = upload(gw, "/apps/temp_sensor/bulk-data/calib",
                  ("file", "page.html", "text/html", data))
    assert resp.status == 201, resp
    return f"/apps/temp_sensor/bulk-data/calib/{resp.json()['id']}", data


def test_a_flood_of_ranges_gets_at_most_the_file(gw: Gateway, big_upload: tuple[str, bytes]
                                                 ) -> None:
    url, data = big_upload
    header = "bytes=" + ", ".join(["0-"] * 2000)
    assert len(header) > 6000
    resp = gw.get(url, headers={"Range": header})
    assert resp.status == 200 and resp.body == data
    many = "bytes=" + ", ".join(f"{i * 1000}-{i * 1000 + 10}" for i in range(100))
    resp = gw.get(url, headers={"Range": many})
    assert resp.status == 200 and len(resp.body) == MIB
    # overlapping and adjacent ranges merge into one part
    resp = gw.get(url, headers={"Range": "bytes=0-99, 50-199, 200-299"})
    assert resp.status == 206 and resp.headers["content-range"] == f"bytes 0-299/{MIB}"
    assert resp.body == data[:300]
    # a few real ranges stay one multipart answer
    resp = gw.get(url, headers={"Range": "bytes=0-9, 500000-500009"})
    assert resp.status == 206 and resp.headers["content-type"].startswith("multipart/byteranges")
    assert len(resp.body) < 1000


def test_downloads_are_never_sniffed_or_run(gw: Gateway, big_upload: tuple[str, bytes]) -> None:
    url, _ = big_upload
    for headers in ({}, {"Range": "bytes=0-9"}):
        resp = gw.get(url, headers=headers)
        assert resp.headers["content-type"] == "text/html"  # what the uploader named
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in resp.headers["content-security-policy"]
        assert "default-src 'none'" in resp.headers["content-security-policy"]


# 6: body limits --------------------------------------------------------------------------------
def test_body_limits_hold_for_every_content_type(gw: Gateway) -> None:
    url = "/apps/temp_sensor/logs/configuration"
    small = b'{"max_entries": 50}'
    big = small + b" " * (3 * MIB)
    for ctype in ("application/x-www-form-urlencoded", "application/json", "text/plain"):
        body = assert_error(gw.request("PUT", url, raw=big, headers={"Content-Type": ctype}),
                            413)
        assert "server.max_json_body_bytes" in body["message"]
    # what `curl -d` sends: a JSON body labelled form-urlencoded is still read as JSON
    resp = gw.request("PUT", url, raw=small,
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status == 204, resp
    assert gw.get(url).json()["max_entries"] == 50


def test_chunked_bodies_over_the_limit_are_refused(gw: Gateway) -> None:
    with socket.create_connection(("127.0.0.1", gw.port), timeout=30) as s:
        s.sendall(b"PUT /api/v1/apps/temp_sensor/logs/configuration HTTP/1.1\r\nHost: x\r\n"
                  b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n")
        chunk = b" " * 65536
        for _ in range(40):
            s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        s.sendall(b"0\r\n\r\n")
        assert s.recv(64).startswith(b"HTTP/1.1 413")


# 12: 405 and HEAD ------------------------------------------------------------------------------
def test_every_405_carries_allow(gw: Gateway) -> None:
    for method, path, allowed in (("PATCH", "/apps", {"GET", "HEAD"}),
                                  ("DELETE", "/version-info", {"GET", "HEAD"}),
                                  ("POST", "/apps/temp_sensor/configurations",
                                   {"GET", "HEAD", "DELETE"})):
        resp = gw.request(method, path)
        assert_error(resp, 405)
        assert set(resp.headers["allow"].replace(" ", "").split(",")) == allowed, resp.headers
    resp = gw.request("POST", "/areas/x/bulk-data/calib")  # read-only entity type (spec)
    assert resp.status == 405 and resp.headers["allow"] == "GET"


def test_head_works_on_every_get_route(gw: Gateway, big_upload: tuple[str, bytes]) -> None:
    url, _ = big_upload
    host = gw.get("/components").json()["items"][0]["id"]
    for path in ("/", "/health", "/docs", "/apps", "/apps/temp_sensor",
                 f"/components/{host}/data", "/apps/temp_sensor/configurations/max_temp",
                 "/faults", "/apps/temp_sensor/docs", url, "/apps/temp_sensor/locks"):
        get = gw.get(path)
        head = gw.request("HEAD", path, timeout=10)
        assert head.status == get.status, (path, head, get)
        assert head.body == b""
        assert head.headers.get("content-type") == get.headers.get("content-type")
    # an event stream never ends; HEAD answers its headers at once
    head = gw.request("HEAD", "/faults/stream", timeout=10)
    assert head.status == 200 and head.headers["content-type"].startswith("text/event-stream")


# 13: 501 on every route of an absent feature ---------------------------------------------------
def test_item_routes_of_absent_features_answer_501(gw: Gateway) -> None:
    doc = gw.get("/docs").json()
    checked = 0
    for template, ops in doc["paths"].items():
        for method, op in ops.items():
            codes = op["responses"]
            if template.endswith("/docs") or "501" not in codes \
                    or any(c.startswith("2") for c in codes):
                continue  # served (an absent feature's route documents no success), or a 405
            path = template.replace("{app_id}", "temp_sensor").replace(
                "{component_id}", "c").replace("{area_id}", "a").replace(
                "{function_id}", "f")
            path = "/".join("x1" if p.startswith("{") else p for p in path.split("/"))
            body = assert_error(gw.request(method.upper(), path, body={}), 501,
                                "not-implemented")
            assert body["parameters"]["feature"], body
            checked += 1
    assert checked >= 8  # data-categories and data-groups on four entity types at least
    # features built but not configured in this gateway: 501 on their item routes too
    for method, path in (("GET", "/apps/temp_sensor/scripts/s1"),  # no scripts.scripts_dir
                         ("PUT", "/updates/u1/prepare")):  # no update provider plugin
        assert_error(gw.request(method, path), 501, "not-implemented")
    # the scoped document below a collection is the document, never an item named "docs"
    for path in ("/apps/temp_sensor/data-categories/docs", "/apps/temp_sensor/triggers/docs",
                 "/apps/temp_sensor/cyclic-subscriptions/docs", "/updates/docs"):
        assert "paths" in gw.get(path).json(), path


# 5: client log flooding ------------------------------------------------------------------------
def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        try:
            return s.recv(256)
        except OSError:
            return b""


def test_malformed_requests_cost_one_rate_limited_line_each(gw: Gateway) -> None:
    before = log_text(gw)
    bad = (b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
           b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
           b"GET /api/v1/health HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    for i in range(60):
        assert _raw(gw.port, bad[i % 3]).startswith(b"HTTP/1.")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "Malformed request" not in log_text(gw)[len(before):]:
        time.sleep(0.1)
    new = log_text(gw)[len(before):]
    assert "Traceback" not in new
    lines = [ln for ln in new.splitlines() if "Malformed request from" in ln]
    assert 1 <= len(lines) <= LOG_LINES_PER_MINUTE, new
    assert all(" WARNING " in ln for ln in lines)


# 15 is in test_configurations.py; 3 in test_security.py.
# 11: readiness ---------------------------------------------------------------------------------
def test_health_says_starting_until_discovery_settled(robot: Robot, domain: int,
                                                      tmp_path: Path) -> None:
    g = Gateway(free_port(), domain, [f"state_dir={tmp_path / 'state'}"], tmp_path / "gw.log")
    g.start()
    try:
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            health = g.get("/health").json()
            seen.append(health)
            assert health["status"] in ("starting", "healthy"), health
            assert health["ready"] is (health["status"] == "healthy")
            if health["ready"]:
                apps = {i["id"] for i in g.get("/apps").json()["items"]}
                assert set(ROBOT_NODES) <= apps, apps  # ready: entity lists are complete
                break
            time.sleep(0.05)
        assert seen[-1]["ready"], seen[-1]
    finally:
        g.stop()


# 8: bounded stop -------------------------------------------------------------------------------
def _hang(g: Gateway, out: list[Response]) -> threading.Thread:
    """A call in flight: a parameter read of a node that never answers."""
    def run() -> None:
        try:
            out.append(g.get("/apps/unresponsive_param/configurations", timeout=120))
        except OSError:
            pass  # the gateway left at once (second signal): no answer

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _hang_in_flight(g: Gateway, out: list[Response]) -> threading.Thread:
    """A call in flight for good; a call answered early (the node's parameter services not yet
    discovered on a busy machine) is made again until one hangs."""
    deadline = time.monotonic() + 60
    t = _hang(g, out)
    while time.monotonic() < deadline:
        if not t.is_alive():  # answered (not hanging): try again
            out.clear()
            t = _hang(g, out)
        # the hanging call and this /health read itself
        if g.get("/health").json()["x-vendor-requests"]["in_flight"] >= 2 and t.is_alive():
            return t
        time.sleep(0.1)
    raise AssertionError(f"no call stayed in flight; last answer {out!r}")


@contextlib.contextmanager
def _stop_gateway(robot: Robot, domain: int, tmp_path: Path, grace: float
                  ) -> Iterator[Gateway]:
    settings = [f"state_dir={tmp_path / 'state'}", "parameter_service_timeout_sec=600",
                "parameter_negative_cache_sec=0", f"server.shutdown_grace_sec={grace}"]
    g = Gateway(free_port(), domain, settings, tmp_path / "gw.log").start()
    try:
        g.wait_for("/apps", lambda b: "unresponsive_param" in {i["id"] for i in b["items"]},
                   timeout=30)
        yield g
    finally:  # a failed test leaves no gateway behind
        if g.proc is not None and g.proc.poll() is None:
            os.killpg(g.proc.pid, signal.SIGKILL)
            g.proc.wait(10)


def _wait_exit(g: Gateway, timeout: float) -> None:
    assert g.proc is not None
    try:
        g.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(g.proc.pid, signal.SIGKILL)
        g.proc.wait(5)
        raise AssertionError(f"the gateway did not exit within {timeout} s; log:\n"
                             f"{log_text(g)[-3000:]}") from None


def test_stop_answers_calls_in_flight_503_within_the_grace(robot: Robot, domain: int,
                                                           tmp_path: Path) -> None:
    with _stop_gateway(robot, domain, tmp_path, grace=1.0) as g:
        assert g.proc is not None
        out: list[Response] = []
        t = _hang_in_flight(g, out)  # the call waits 600 s for the silent node
        g.proc.send_signal(signal.SIGTERM)
        _wait_exit(g, 60)  # far below the call's own 600 s
        t.join(10)
    assert out, "the call in flight got no answer"
    body = assert_error(out[0], 503, "service-unavailable")
    assert "server.shutdown_grace_sec" in body["message"]
    assert "answered 503" in log_text(g)


def test_a_second_signal_stops_at_once(robot: Robot, domain: int, tmp_path: Path) -> None:
    with _stop_gateway(robot, domain, tmp_path, grace=120.0) as g:
        assert g.proc is not None
        out: list[Response] = []
        _hang_in_flight(g, out)
        g.proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 20
        while "stopping:" not in log_text(g) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert g.proc.poll() is None  # waiting for the call, within its 120 s grace
        g.proc.send_signal(signal.SIGINT)
        _wait_exit(g, 15)
    assert "second stop signal" in log_text(g)


def test_a_crash_leaves_every_thread_stack_in_the_log(domain: int, tmp_path: Path) -> None:
    """A segfault (as in native DDS code) still kills the gateway, but its log shows each
    Python thread's stack. With the single-threaded executor: rclpy's EventsExecutor (the
    default) turns the same dump on itself, the gateway does it for every configuration."""
    g = Gateway(free_port(), domain, [f"state_dir={tmp_path / 'state'}", "ros.executor=single"],
                tmp_path / "gw.log").start()
    assert g.proc is not None
    g.proc.send_signal(signal.SIGSEGV)
    _wait_exit(g, 30)
    assert g.proc.returncode == -signal.SIGSEGV
    text = log_text(g)
    assert "Fatal Python error: Segmentation fault" in text, text[-3000:]
    stacks = text.count("Thread 0x") + text.count("Current thread 0x")
    assert stacks >= 2, text[-3000:]  # the event loop's and the ROS executor's at least
    assert "(most recent call first)" in text


def test_stop_answers_a_fast_path_call_in_flight_503(robot: Robot, domain: int, ros: Any,
                                                      tmp_path: Path) -> None:
    """A service execution on the fast path (gateway/http/hot.py) is drained like any call."""
    from rclpy.callback_groups import ReentrantCallbackGroup
    from std_srvs.srv import Trigger

    release, stall_now = threading.Event(), threading.Event()

    def stall(_req: Any, res: Any) -> Any:
        if stall_now.is_set():  # calls before answer (and make the path hot); this one stalls
            release.wait(120)
        res.success = True
        return res

    def hits(g: Gateway) -> int:
        return int(g.get("/health").json()["x-vendor-hot-answers"]["hits"])

    node = ros.node("stall_server", "/stall")
    node.create_service(Trigger, "stall", stall, callback_group=ReentrantCallbackGroup())
    path = "/apps/stall_server/operations/stall/executions"
    try:
        with _stop_gateway(robot, domain, tmp_path, grace=1.0) as g:
            assert g.proc is not None
            g.wait_for("/apps/stall_server/operations", lambda b: any(
                i["id"] == "stall" for i in b["items"]), timeout=90)
            # hot once a call is answered on the fast path (a discovery change, e.g. under
            # load, makes the next one cold again)
            warm_until = time.monotonic() + 60
            while True:
                before = hits(g)
                assert g.request("POST", path, {}).status == 200
                if hits(g) > before:
                    break
                assert time.monotonic() < warm_until, "the call never took the fast path"
            hot_hits = hits(g)
            stall_now.set()
            out: list[Response] = []
            t = threading.Thread(target=lambda: out.append(
                g.request("POST", path, {"timeout": 600}, timeout=120)), daemon=True)
            t.start()
            wait_for_flight = time.monotonic() + 30
            while g.get("/health").json()["x-vendor-requests"]["in_flight"] < 2:
                assert time.monotonic() < wait_for_flight, "the call never went in flight"
                time.sleep(0.1)
            assert hits(g) == hot_hits + 1
            g.proc.send_signal(signal.SIGTERM)
            _wait_exit(g, 60)
            t.join(10)
    finally:
        release.set()
    assert out, "the call in flight got no answer"
    body = assert_error(out[0], 503, "service-unavailable")
    assert "server.shutdown_grace_sec" in body["message"]
