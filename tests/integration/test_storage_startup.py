"""A real gateway started on a full (or read-only) state directory: it serves, /health is
degraded naming the fault store, a fault reported meanwhile is listed (held in memory, not
acknowledged); once space is back /health is healthy by itself, the fault is in the database
and acknowledged, and a gateway restarted on the same directory still lists it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.faults.reporter import ERROR
from tests.conftest import free_port
from tests.harness import Gateway, wait_until
from tests.integration.test_faults_support import RosSide, faults_by_code
from tests.smallfs import fill, free, free_bytes, remount, small_tmpfs

pytestmark = pytest.mark.integration

BUDGET_S = 60.0


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "fs", "4m") as mounted:
        yield mounted


@pytest.fixture
def ros(domain: int) -> Iterator[RosSide]:
    side = RosSide(domain)
    yield side
    side.close()


def gateway(domain: int, state: Path, log: Path) -> Gateway:
    return Gateway(free_port(), domain, [f"state_dir={state}", "plugins=[update_provider]",
                                         f"fault_triggers.storage.path={state / 'rules.json'}"],
                   log)


def health(gw: Gateway) -> tuple[int, dict[str, Any]]:
    resp = gw.get("/health")
    return resp.status, resp.json()


def failing(gw: Gateway) -> dict[str, dict[str, Any]]:
    return {f["store"]: f for f in health(gw)[1]["x-vendor-storage"]["failing"]}


def healthy(gw: Gateway) -> bool:
    status, body = health(gw)
    return status == 200 and body["status"] == "healthy"


def stored_codes(state: Path) -> set[str]:
    """Fault codes in the database file (read by another process, as a restart would)."""
    path = state / "faults.db"
    if not path.is_file():
        return set()
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return {code for (code,) in db.execute("SELECT code FROM faults")}
    except sqlite3.Error:
        return set()
    finally:
        db.close()


def test_full_state_dir_at_start(fs: Path, domain: int, ros: RosSide, tmp_path: Path) -> None:
    state = fs / "state"
    fill(fs)
    assert free_bytes(fs) < 4096
    reporter = ros.reporter(ros.node("startup_full_probe"))
    with gateway(domain, state, tmp_path / "first.log") as gw:
        # serving, degraded, the fault store named with the reason
        status, body = health(gw)
        assert status == 503 and body["status"] == "degraded", body
        stores = {f["store"]: f for f in body["x-vendor-storage"]["failing"]}
        assert stores["faults"]["path"] == str(state) and stores["faults"]["kind"] == "full"
        assert "fault-triggers" in stores and "updates" in stores, stores
        assert body["x-vendor-fault-manager"]["persistent"] is False
        assert any(w["code"] == "storage_write_failing" and "faults" in w["message"]
                   for w in body["warnings"]), body["warnings"]
        assert gw.get("/faults").status == 200

        # a fault reported now is listed, held in memory: not acknowledged yet
        reporter.report("STARTUP_FULL", ERROR, "reported while the disk is full")
        wait_until(lambda: "STARTUP_FULL" in faults_by_code(gw), BUDGET_S, "the fault listed")
        assert "faults" in failing(gw)
        assert stored_codes(state) == set()
        assert reporter.pending == 1

        # space returns: healthy by itself, the fault in the database, then acknowledged
        free(fs)
        wait_until(lambda: healthy(gw), BUDGET_S, "/health healthy again")
        assert health(gw)[1]["x-vendor-fault-manager"]["persistent"] is True
        wait_until(lambda: "STARTUP_FULL" in stored_codes(state), BUDGET_S,
                   "the fault in the database")
        wait_until(lambda: reporter.pending == 0, BUDGET_S, "the report acknowledged")
        assert "STARTUP_FULL" in faults_by_code(gw)
    log = (tmp_path / "first.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
    assert log.count("faults: writes fail") == 1

    with gateway(domain, state, tmp_path / "second.log") as gw:  # nothing was lost
        wait_until(lambda: healthy(gw), BUDGET_S, "/health healthy after the restart")
        assert "STARTUP_FULL" in faults_by_code(gw)
        assert health(gw)[1]["x-vendor-fault-manager"]["persistent"] is True


def test_read_only_state_dir_at_start(fs: Path, domain: int, ros: RosSide,
                                      tmp_path: Path) -> None:
    state = fs / "state"
    reporter = ros.reporter(ros.node("startup_ro_probe"))
    with gateway(domain, state, tmp_path / "first.log") as gw:
        reporter.report("BEFORE_RO", ERROR, "stored before the remount")
        wait_until(lambda: reporter.pending == 0, BUDGET_S, "the first report stored")
    remount(fs, "ro")
    try:
        with gateway(domain, state, tmp_path / "second.log") as gw:
            stores = failing(gw)
            assert stores["faults"]["kind"] == "read-only", stores
            assert stores["triggers"]["kind"] == "read-only", stores  # "unable to open": why
            # the database is read read-only: what it held is listed
            assert "BEFORE_RO" in faults_by_code(gw)
            reporter.report("DURING_RO", ERROR, "reported while read-only")
            wait_until(lambda: "DURING_RO" in faults_by_code(gw), BUDGET_S,
                       "the new fault listed")
            remount(fs, "rw")
            wait_until(lambda: healthy(gw), BUDGET_S, "/health healthy again")
            wait_until(lambda: "DURING_RO" in stored_codes(state), BUDGET_S,
                       "the new fault in the database")
            assert {"BEFORE_RO", "DURING_RO"} <= stored_codes(state)
            wait_until(lambda: reporter.pending == 0, BUDGET_S, "the report acknowledged")
    finally:
        remount(fs, "rw")
    with gateway(domain, state, tmp_path / "third.log") as gw:
        assert {"BEFORE_RO", "DURING_RO"} <= set(faults_by_code(gw))
        wait_until(lambda: healthy(gw), BUDGET_S, "/health healthy after the restart")
