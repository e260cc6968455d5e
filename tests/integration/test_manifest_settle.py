"""A manifest written in place, with a pause mid-file, is never loaded half-written."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.harness import Gateway

pytestmark = pytest.mark.integration

APPS = 13
HEAD = """\
manifest_version: "1.0"
metadata: {{name: settle-test, version: "{version}"}}
areas:
  - id: powertrain
components:
  - id: ecu
    area: powertrain
apps:
"""
APP = """\
  - id: app-{n}
    is_located_on: ecu
"""
PAUSE_S = 0.25  # the writer's pause mid-file (below discovery.manifest.settle_ms)


def text(version: str) -> tuple[str, str]:
    """The manifest in two halves; the first is a valid manifest of 4 apps on its own."""
    apps = [APP.format(n=n) for n in range(APPS)]
    return HEAD.format(version=version) + "".join(apps[:4]), "".join(apps[4:])


@pytest.fixture(scope="module")
def gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, Path]]:
    root = tmp_path_factory.mktemp("settle")
    path = root / "manifest.yaml"
    path.write_text("".join(text("0")))
    settings = ["discovery.mode=manifest_only", f"discovery.manifest_path={path}",
                "discovery.manifest.watch_interval_ms=50", "discovery.manifest.settle_ms=1000",
                f"state_dir={root / 'state'}"]
    with Gateway(free_port(), domain, settings, root / "gateway.log") as g:
        g.wait_for("/apps", lambda b: len(b["items"]) == APPS, timeout=30)
        yield g, path


def test_a_manifest_written_in_two_halves_never_shrinks_the_app_list(
        gw: tuple[Gateway, Path]) -> None:
    g, path = gw
    counts: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            resp = g.get("/apps")
            if resp.status == 200:
                counts.append(len(resp.json()["items"]))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        for cycle in range(1, 4):
            first, rest = text(str(cycle))
            with path.open("w") as f:  # in place: truncated, then written in two halves
                f.write(first)
                f.flush()
                time.sleep(PAUSE_S)
                f.write(rest)
            g.wait_for("/manifest/status", lambda b, v=str(cycle): b["metadata"]["version"] == v,
                       timeout=20)
    finally:
        done.set()
        watcher.join(10)
    assert len(counts) > 10, counts
    assert min(counts) == APPS, f"the app list shrank: {sorted(set(counts))}"
    status = g.get("/manifest/status").json()
    assert status["reloads"] >= 3 and "last_reload" not in status, status
