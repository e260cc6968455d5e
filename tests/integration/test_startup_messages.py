"""Start-up messages that name the cause and the fix (issue 44), from real processes."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import ROOT, Gateway, wait_until


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port some other program listens on."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def test_a_port_in_use_fails_at_once_naming_port_and_setting(
        busy_port: int, domain: int, tmp_path: Path) -> None:
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gateway", "run", "--port", str(busy_port), "--domain",
         str(domain), "--set", f"state_dir={tmp_path / 'state'}"],
        cwd=ROOT, env=ros_env(domain), capture_output=True, text=True, timeout=120)
    took = time.monotonic() - began
    assert proc.returncode == 2, proc.stderr
    assert f"port {busy_port} is already in use" in proc.stderr, proc.stderr
    assert "server.port" in proc.stderr and "--port" in proc.stderr
    assert "serving" not in proc.stderr and "ROS domain" not in proc.stderr  # before ROS
    assert took < 30, took


def test_the_fleet_demo_refuses_a_taken_port_before_starting_robots(busy_port: int) -> None:
    proc = subprocess.run(
        [sys.executable, "deploy/fleet_demo.py", "--port", str(busy_port), "--wait", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"port {busy_port} is already in use" in proc.stderr and "--port" in proc.stderr
    assert "robot1" not in proc.stdout


def test_an_empty_domain_is_warned_about_naming_the_domain(domain: int, tmp_path: Path) -> None:
    log = tmp_path / "gw.log"
    with Gateway(free_port(), domain, [f"state_dir={tmp_path / 'state'}"], log_path=log) as gw:
        health = gw.wait_for("/health", lambda h: h["ready"], timeout=30)
        wait_until(lambda: "no ROS nodes seen" in log.read_text(), 10, "the warning")
        health = gw.get("/health").json()
    text = log.read_text()
    assert text.count("no ROS nodes seen") == 1, text
    assert f"ROS domain {domain} (set by --domain" in text and "ROS_DOMAIN_ID" in text
    codes = [w["code"] for w in health["warnings"]]
    assert "no_ros_nodes" in codes, health["warnings"]


def test_robot_only_with_an_unknown_name_lists_the_valid_ones() -> None:
    proc = subprocess.run([sys.executable, "-m", "gateway", "robot", "--only", "nosuch"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "diag-gateway robot: unknown demo node(s): nosuch; valid names: temp_sensor" \
        in proc.stderr, proc.stderr
    assert "gateway.demo.robot" not in proc.stderr


def test_bag_pull_of_a_closed_port_names_host_and_port(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.run([sys.executable, "-m", "gateway", "bag", "pull",
                           f"http://127.0.0.1:{port}/api/v1/apps/a/bulk-data/rosbags/X",
                           "-o", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    assert f"cannot reach 127.0.0.1:{port} (Connection refused)" in proc.stderr, proc.stderr
