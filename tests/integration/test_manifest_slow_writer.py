"""A manifest written in place by a writer that pauses longer than the settle window.

The first part of the file is a valid manifest of its own with fewer apps; it holds still
past `discovery.manifest.settle_ms` (default 500 ms) while the writer pauses 0.8-1.2 s. Such a
load drops entities, so it is held back until the files held still for DROP_CONFIRM_S: the
served app list never shrinks to the part's content. A real removal is applied once settled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.harness import Gateway
from tests.integration.test_manifest_settle import APP, HEAD  # one manifest text

pytestmark = pytest.mark.integration

APPS = 9


def manifest(version: str, apps: int = APPS) -> str:
    return HEAD.format(version=version) + "".join(APP.format(n=n) for n in range(apps))


@pytest.fixture(scope="module")
def gw(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, Path]]:
    root = tmp_path_factory.mktemp("slow_writer")
    path = root / "manifest.yaml"
    path.write_text(manifest("0"))
    settings = ["discovery.mode=manifest_only", f"discovery.manifest_path={path}",
                f"state_dir={root / 'state'}"]  # default watch interval and settle window
    with Gateway(free_port(), domain, settings, root / "gateway.log") as g:
        g.wait_for("/apps", lambda b: len(b["items"]) == APPS, timeout=30)
        yield g, path


class AppCounts:
    """Polls /apps in a thread; every count seen."""

    def __init__(self, g: Gateway) -> None:
        self.g = g
        self.counts: list[int] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.is_set():
            resp = self.g.get("/apps")
            if resp.status == 200:
                self.counts.append(len(resp.json()["items"]))
            time.sleep(0.02)

    def stop(self) -> list[int]:
        self.done.set()
        self.thread.join(10)
        return self.counts


@pytest.mark.parametrize("cut_after_apps", [0, 4])
def test_a_writer_pausing_mid_file_never_shrinks_the_app_list(
        gw: tuple[Gateway, Path], cut_after_apps: int) -> None:
    g, path = gw
    watch = AppCounts(g)
    try:
        for cycle, pause_s in enumerate((0.8, 1.0, 1.2), start=1):
            version = f"{cut_after_apps}.{cycle}"
            whole = manifest(version)
            cut = len(manifest(version, cut_after_apps))  # a valid manifest of fewer apps
            with path.open("w") as f:  # in place: truncated, then written in two parts
                f.write(whole[:cut])
                f.flush()
                time.sleep(pause_s)  # the slow writer's pause (what is tested)
                f.write(whole[cut:])
            g.wait_for("/manifest/status",
                       lambda b, v=version: b["metadata"]["version"] == v, timeout=30)
    finally:
        counts = watch.stop()
    assert len(counts) > 10, counts
    assert min(counts) == APPS, f"the app list shrank: {sorted(set(counts))}"


def test_a_real_removal_is_applied_once_the_file_held_still(gw: tuple[Gateway, Path]) -> None:
    g, path = gw
    path.write_text(manifest("smaller", 3))
    g.wait_for("/apps", lambda b: len(b["items"]) == 3, timeout=60)
    assert g.get("/manifest/status").json()["metadata"]["version"] == "smaller"
    path.write_text(manifest("restored"))
    g.wait_for("/apps", lambda b: len(b["items"]) == APPS, timeout=60)
