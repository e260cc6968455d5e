"""Real gateways on each event loop (server.event_loop): both serve and report their loop and
its lag in /health; a bad value stops the start with a message naming the setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.domains import next_domain
from tests.harness import Gateway

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("choice, loop, measured_by", [("auto", "uvloop", "probe"),
                                                        ("asyncio", "asyncio", "selector")])
def test_a_gateway_serves_on_its_loop_and_says_which(tmp_path: Path, choice: str, loop: str,
                                                     measured_by: str) -> None:
    with Gateway(free_port(), next_domain(), [f"state_dir={tmp_path}",
                                              f"server.event_loop={choice}"],
                 tmp_path / "gw.log") as gw:
        health = gw.wait_for("/health", lambda h: "x-vendor-event-loop" in h, timeout=60)
        lag = health["x-vendor-event-loop"]
        assert (lag["loop"], lag["measured_by"]) == (loop, measured_by), lag
        for _ in range(3):  # the hot path answers on either loop
            resp = gw.get("/apps")
            assert resp.status == 200 and "items" in resp.json()
        assert gw.get("/apps/nope").status == 404


def test_an_unknown_loop_stops_the_start_naming_the_setting(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "gateway", "run", "--port", str(free_port()),
                          "--set", f"state_dir={tmp_path}", "--set", "server.event_loop=fast"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "server.event_loop" in out.stderr and "uvloop" in out.stderr, out.stderr
