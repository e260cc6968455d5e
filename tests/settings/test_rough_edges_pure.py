"""Messages that name the cause and the fix (issue 44): the pure parts."""

from __future__ import annotations

import io
import logging
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from zeroconf import service_type_name

from gateway import cli
from gateway.demo import fleet_support, robot
from gateway.discovery import manifest, manifest_keys
from gateway.discovery.empty_domain import CODE, EmptyDomain, domain_source
from gateway.process import portcheck
from gateway.settings import config
from gateway.settings.suggest import closest_key
from recorder import pull

ROOT = Path(__file__).resolve().parents[2]


# ----- 2. "did you mean" of unknown settings -----

def test_a_key_without_its_section_suggests_the_full_key() -> None:
    assert closest_key("rosbag.enabled", ["docs.enabled", "snapshots.rosbag.enabled"]) == \
        "snapshots.rosbag.enabled"
    assert closest_key("rosbag.enabeld", ["docs.enabled", "snapshots.rosbag.enabled"]) == \
        "snapshots.rosbag.enabled"
    assert closest_key("port", ["server.port", "server.host"]) == "server.port"
    assert closest_key("server.prot", ["server.port", "server.host"]) == "server.port"
    assert closest_key("zzzz", ["server.port"]) is None


def test_the_misspelt_rosbag_setting_is_refused_naming_the_snapshots_key() -> None:
    message = str(config.unknown_setting("rosbag.enabled"))
    assert "did you mean 'snapshots.rosbag.enabled'" in message and "docs" not in message
    assert "did you mean 'locking.enabled'" in str(config.unknown_setting("locking.enabeld"))


# ----- 8. "(feature not in this build)" once -----

def test_an_unbuilt_feature_is_named_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "unbuilt_feature", lambda key, declared: "locks")
    message = str(config.unknown_setting("locking.enabled"))
    assert message.count("not in this build") == 1, message
    assert "'locks'" in message and "'locking.enabled'" in message


# ----- 5. unknown manifest keys -----

def test_unknown_manifest_keys_are_found_with_their_path_and_a_suggestion() -> None:
    tree = {"apps": [{"id": "a1", "is_locatd_on": "c", "ros_binding": {"node_nam": "x"}}],
            "components": [{"id": "c", "subcomponents": [{"id": "d", "arae": "x"}]}],
            "functions": [{"id": "f", "hosted_by": ["a1"]}], "config": {"unmanifested": "warn"}}
    found = {u.path: u.suggestion for u in manifest_keys.unknown_keys(tree)}
    assert found == {"apps[a1].is_locatd_on": "is_located_on",
                     "apps[a1].ros_binding.node_nam": "node_name",
                     "components[c].subcomponents[d].arae": "area",
                     "config.unmanifested": "unmanifested_nodes"}


def test_the_loader_warns_on_unknown_keys_naming_file_path_and_key(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    f = tmp_path / "m.yaml"
    f.write_text('manifest_version: "1.0"\ncomponets: []\ncomponents:\n  - id: c\n'
                 "apps:\n  - id: a1\n    is_locatd_on: c\n")
    with caplog.at_level(logging.WARNING, logger="gateway.discovery.manifest"):
        m = manifest.load(str(f), strict=False)
    assert [a.id for a in m.apps] == ["a1"]  # warned, not refused
    text = caplog.text
    assert f"{f}:6: unknown key 'apps[a1].is_locatd_on' ignored; did you mean " \
           "'is_located_on'?" in text, text
    assert "'componets' ignored; did you mean 'components'?" in text


# ----- 3. a domain without nodes -----

def test_an_empty_domain_warns_once_naming_the_domain_and_the_setting() -> None:
    watch = EmptyDomain(7, domain_source(-1, {"ROS_DOMAIN_ID": "7"}))
    assert watch.warnings() == []  # not ready yet
    watch.graph(SimpleNamespace(nodes=()))
    message = watch.on_ready()
    assert message is not None and "ROS domain 7" in message and "ROS_DOMAIN_ID=7" in message
    assert "--domain" in message and "ros.domain_id" in message
    assert watch.on_ready() is None  # once
    assert [w["code"] for w in watch.warnings()] == [CODE]
    watch.graph(SimpleNamespace(nodes=("n",)))
    assert watch.warnings() == []  # nodes came: the warning goes


def test_a_domain_with_nodes_gives_no_warning() -> None:
    watch = EmptyDomain(0, domain_source(-1, {}))
    watch.graph(SimpleNamespace(nodes=("n",)))
    assert watch.on_ready() is None and watch.warnings() == []
    assert "not set" in domain_source(-1, {}) and "--domain" in domain_source(3, {})


def test_a_fleet_primary_without_nodes_of_its_own_is_not_warned_about() -> None:
    watch = EmptyDomain(0, domain_source(-1, {}), aggregating=True)
    watch.graph(SimpleNamespace(nodes=()))
    assert watch.on_ready() is None and watch.warnings() == []


# ----- 4. a port in use -----

def test_a_port_in_use_is_refused_naming_the_port_and_the_setting() -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        problem = portcheck.check_bindable("127.0.0.1", port)
    assert problem is not None and f"port {port} is already in use" in problem
    assert "server.port" in problem and "--port" in problem
    assert portcheck.check_bindable("127.0.0.1", port) is None  # closed: free again


# ----- 6. bag pull -----

def test_an_unreachable_gateway_is_named_by_host_and_port() -> None:
    text = pull.unreachable("http://10.1.2.3:8081/api/v1/x",
                            ConnectionRefusedError(111, "Connection refused"))
    assert "10.1.2.3:8081" in text and "Connection refused" in text
    assert "127.0.0.1:80 " in pull.unreachable("http://127.0.0.1/x", TimeoutError("timed out"))


def test_the_progress_line_is_drawn_once() -> None:
    out = io.StringIO()
    bar = pull.Progress(out, 100)
    bar.update(100)
    bar.close()
    assert out.getvalue().count("100.0%") == 1, repr(out.getvalue())


def test_a_pull_of_a_closed_port_names_it() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(pull.PullError, match=f"127.0.0.1:{port}"):
            pull.pull(f"http://127.0.0.1:{port}/api/v1/x", "/tmp/helperE-unused", progress=None)


# ----- 7. robot --only -----

def test_an_unknown_demo_node_lists_the_valid_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert robot.main(["--only", "nosuch"], prog="diag-gateway robot") == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "temp_sensor" in err and "lifecycle_worker" in err
    assert "gateway.demo" not in err
    with pytest.raises(ValueError, match="valid names: temp_sensor"):
        robot.Robot.start(0, nodes=["nosuch"])


# ----- 9. README's app count -----

def test_readme_counts_the_apps_the_demo_lists() -> None:
    words = {14: "fourteen", 15: "fifteen"}
    watchdog = any(p.startswith("plugins=") and "graph_watchdog" in p for p in cli.DEMO_PLUGINS)
    apps = len(robot.NODES) + (1 if watchdog else 0)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(x for x in readme.splitlines() if x.startswith("| `diag-gateway demo [--port"))
    assert f"({words[len(robot.NODES)]} real rclpy nodes" in line
    assert f"`/apps` lists {apps} apps" in line


# ----- 1. fleet demo -----

def test_the_fleet_service_type_is_of_this_run_and_valid_for_mdns() -> None:
    one, two = fleet_support.run_service(), fleet_support.run_service()
    assert one != two and re.fullmatch(r"_dg-[0-9a-f]{6}\._tcp\.local\.", one)
    assert service_type_name(one) == one


def test_the_failure_report_shows_the_log_tail_or_says_it_is_empty(tmp_path: Path) -> None:
    log = tmp_path / "primary.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    text = fleet_support.failure_report("the primary", log, 180, None, "--wait SEC")
    assert "did not answer within 180 s" in text and "line 99" in text and "line 50" not in text
    assert "--wait SEC" in text and "FLEET_WAIT" in text
    log.write_text("")
    assert "is empty" in fleet_support.failure_report("p", log, 3, 2, "--wait SEC")
    assert "exited with code 2" in fleet_support.failure_report("p", log, 3, 2, "--wait SEC")
    assert "cannot be read" in fleet_support.log_tail(tmp_path / "missing.log")


def test_wait_http_takes_a_503_as_an_answer_and_stops_when_the_process_died() -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = b'{"status":"degraded","name":"robot1"}'
            self.send_response(503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/health"
        assert fleet_support.wait_http(url, 5, '"name":"robot1"')
        assert not fleet_support.wait_http(url, 60, "never", alive=lambda: False)
    finally:
        server.shutdown()
        server.server_close()


def test_the_robot_runs_the_reference_names_for_a_medkit_gateway(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    started: list[list[str]] = []

    class Started(Exception):
        pass

    def start(domain: int, nodes: list[str], log_dir: str | None = None) -> None:
        started.append(list(nodes))
        raise Started

    monkeypatch.setattr(robot.Robot, "start", start)
    for profile, lifecycle in (("medkit", "managed_lifecycle_active"),
                               ("spec", "managed_lifecycle")):
        with pytest.raises(Started):
            cli.main(["robot", "--profile", profile, "--only", "managed_lifecycle,actuator"])
        assert started.pop() == [lifecycle, "actuator"]
    with pytest.raises(SystemExit):
        cli.main(["robot", "--profile", "nosuch"])
    assert "invalid choice" in capsys.readouterr().err
