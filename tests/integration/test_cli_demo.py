"""The command line as a newcomer meets it: the demo banner, a demo config file, piped output."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gateway.demo.robot import ros_env
from tests.conftest import free_port
from tests.harness import ROOT, Gateway

pytestmark = pytest.mark.integration


def _read_banner(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """stdout until the demo's banner ends (its Ctrl-C line)."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    out = b""
    deadline = time.monotonic() + timeout
    with sel:
        while b"Ctrl-C stops" not in out:
            left = deadline - time.monotonic()
            if left <= 0 or proc.poll() is not None:
                raise AssertionError(f"no banner (exit {proc.poll()}): "
                                     f"{out.decode(errors='replace')}")
            if sel.select(min(left, 1.0)):
                out += os.read(proc.stdout.fileno(), 65536)
    return out.decode()


def test_demo_banner_names_the_dashboard_and_keeps_the_files_categories(
        domain: int, tmp_path: Path) -> None:
    config = tmp_path / "demo.yaml"
    config.write_text("bulk_data:\n  categories: [maps]\n", encoding="utf-8")
    port = free_port()
    env = {**ros_env(domain), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "demo", "--port", str(port), "--domain", str(domain),
         "--config", str(config)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        banner = _read_banner(proc, 120)
        dashboard = f"http://127.0.0.1:{port}/"
        assert f"Dashboard: {dashboard}" in banner, banner
        with urllib.request.urlopen(dashboard, timeout=10) as resp:
            assert resp.status == 200 and b"<html" in resp.read().lower()
        gw = Gateway(port, domain)
        host = gw.get("/components").json()["items"][0]["id"]
        categories = gw.get(f"/components/{host}/bulk-data").json()["items"]
        # the file's category stays; the demo adds its own for update packages
        assert "maps" in categories and "packages" in categories, categories
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        assert proc.stdout is not None
        proc.stdout.close()


def test_settings_piped_into_head_ends_quietly() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m gateway settings | head -n 2", shell=True, cwd=ROOT,
        capture_output=True, timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "0"})
    assert proc.returncode == 0
    assert len(proc.stdout.decode().splitlines()) == 2
    assert b"Traceback" not in proc.stderr and b"BrokenPipe" not in proc.stderr, proc.stderr


def test_bag_pull_says_when_the_gateway_records_nothing(domain: int, tmp_path: Path) -> None:
    with Gateway(free_port(), domain, [f"state_dir={tmp_path / 'state'}"]) as gw:
        host = gw.get("/components").json()["items"][0]["id"]
        url = f"{gw.base}/components/{host}/bulk-data/rosbags/ENGINE_OVERHEAT"
        proc = subprocess.run([sys.executable, "-m", "gateway", "bag", "pull", url,
                               "-o", str(tmp_path / "out")], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
    assert proc.returncode == 1
    assert "HTTP 404" in proc.stderr and "snapshots.rosbag.enabled" in proc.stderr, proc.stderr
