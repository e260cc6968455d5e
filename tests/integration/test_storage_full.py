"""A real gateway whose state directory is a full small tmpfs: every write path answers 507
naming the directory and its free space, nothing is registered half, /health is degraded with
the reason; once space is back, /health is healthy by itself, writes work, faults catch up."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.demo.robot import Robot
from gateway.faults.reporter import ERROR
from tests.conftest import free_port
from tests.harness import Gateway, Response, wait_until
from tests.integration.test_faults_support import RosSide, faults_by_code
from tests.smallfs import fill, free, free_bytes, small_tmpfs

pytestmark = pytest.mark.integration

ROBOT_NODES = ("temp_sensor",)
TEMP = "/api/v1/apps/temp_sensor/data/powertrain/engine/temperature"
FAULT = "DISK_FULL_PROBE"
BUDGET_S = 60.0
BIG = 300_000  # bytes: more than the full file system can take


@pytest.fixture(scope="module")
def fs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with small_tmpfs(tmp_path_factory.mktemp("storage") / "fs", "4m") as mounted:
        yield mounted


@pytest.fixture(scope="module")
def gw(robot: Robot, domain: int, fs: Path, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[Gateway]:
    work = tmp_path_factory.mktemp("storage-gw")
    (work / "managed").mkdir()
    settings = [f"state_dir={fs / 'state'}", "bulk_data.categories=[calib]",
                f"scripts.scripts_dir={work / 'managed'}", "scripts.allow_anonymous=true",
                "scripts.allow_root=true", "plugins=[update_provider]",
                f"plugins.update_provider.install_root={fs / 'installed'}",
                f"fault_triggers.storage.path={fs / 'state' / 'rules.json'}",
                "discovery.refresh_debounce_ms=100"]
    with Gateway(free_port(), domain, settings, work / "gateway.log") as g:
        g.wait_for("/apps", lambda b: "temp_sensor" in [a["id"] for a in b["items"]], 30)
        yield g


def multipart(name: str, data: bytes) -> tuple[bytes, str]:
    boundary = "b-" + secrets.token_hex(12)
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"'
            f"\r\nContent-Type: application/octet-stream\r\n\r\n").encode() + data + \
        f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def upload(gw: Gateway, path: str, name: str, size: int) -> Response:
    body, ctype = multipart(name, b"#" * size)
    return gw.request("POST", path, raw=body, headers={"Content-Type": ctype})


def assert_507(resp: Response, store: str, where: Path) -> dict[str, Any]:
    assert resp.status == 507, resp
    body: dict[str, Any] = resp.json()
    assert body["error_code"] == "vendor-error", body
    assert body["vendor_code"] == "x-vendor-insufficient-storage", body
    assert body["parameters"]["store"] == store, body
    assert str(where) in body["message"] and "free there" in body["message"], body
    assert isinstance(body["parameters"]["free_bytes"], int)
    return body


def leftovers(root: Path) -> list[str]:
    """Temporary files and directories of half-done writes."""
    marks = (".incoming", ".tmp", ".fault_triggers", ".storage-probe")
    return [str(p) for p in root.rglob("*") if any(m in p.name for m in marks)]


def trigger(gw: Gateway) -> Response:
    return gw.request("POST", "/apps/temp_sensor/triggers", {
        "resource": TEMP, "trigger_condition": {"condition_type": "OnChange"},
        "multishot": True, "persistent": True, "path": "/header/stamp"})


def fault_rule(gw: Gateway, code: str) -> Response:
    return gw.request("POST", "/apps/temp_sensor/fault-triggers", {
        "data_name": "/powertrain/engine/temperature", "operator": ">", "threshold": 10_000,
        "fault_code": code, "severity": "ERROR"})


def health(gw: Gateway) -> tuple[int, dict[str, Any]]:
    resp = gw.get("/health")
    return resp.status, resp.json()


def failing_stores(gw: Gateway) -> set[str]:
    return {f["store"] for f in health(gw)[1]["x-vendor-storage"]["failing"]}


def test_full_disk_answers_507_degrades_health_and_recovers(gw: Gateway, fs: Path,
                                                            domain: int) -> None:
    state = fs / "state"
    host = gw.get("/components").json()["items"][0]["id"]
    scripts_path = f"/components/{host}/scripts"
    bulk_path = f"/components/{host}/bulk-data/calib"
    assert trigger(gw).status == 201  # the stores exist and work before the disk fills
    assert health(gw)[1]["x-vendor-storage"]["writable"] is True
    scripts_before = {s["id"] for s in gw.get(scripts_path).json()["items"]}
    triggers_before = {t["id"] for t in gw.get("/apps/temp_sensor/triggers").json()["items"]}
    ros = RosSide(domain)
    try:
        reporter = ros.reporter(ros.node("disk_probe"))
        # Larger than the fault database's WAL: a commit cannot reuse old WAL frames.
        wal = state / "faults.db-wal"
        big_description = "d" * ((wal.stat().st_size if wal.exists() else 0) + 128 * 1024)
        fill(fs)
        assert free_bytes(fs) < 4096

        # every write path: 507 naming the directory and its free space, nothing half there
        assert_507(upload(gw, scripts_path, "big.sh", BIG), "scripts", state / "scripts")
        assert {s["id"] for s in gw.get(scripts_path).json()["items"]} == scripts_before
        assert_507(upload(gw, bulk_path, "big.bin", BIG), "bulk-data", state / "bulk_data")
        assert gw.get(bulk_path).json()["items"] == []
        reg = {"id": "pkg_full", "update_name": "x" * BIG}
        assert_507(gw.request("POST", "/updates", reg), "updates", state / "updates")
        assert "pkg_full" not in gw.get("/updates").json()["items"]
        assert gw.get("/updates/pkg_full").status == 404
        resp = fault_rule(gw, "NEVER_" + "X" * 20)
        body = assert_507(resp, "fault-triggers", state)
        assert gw.get("/apps/temp_sensor/fault-triggers").json()["items"] == [], body
        full_triggers = [trigger(gw) for _ in range(40)]  # until the WAL has no room left
        refused = [r for r in full_triggers if r.status != 201]
        assert refused, "a persistent trigger was stored on a full disk 40 times"
        assert_507(refused[0], "triggers", state)
        listed = {t["id"] for t in gw.get("/apps/temp_sensor/triggers").json()["items"]}
        assert listed - triggers_before == {r.json()["id"] for r in full_triggers
                                            if r.status == 201}
        assert leftovers(fs) == []

        # a fault reported now cannot be committed: health says so, the fault waits
        reporter.report(FAULT, ERROR, big_description)
        wait_until(lambda: "faults" in failing_stores(gw), BUDGET_S, "faults failing")
        status, body = health(gw)
        assert status == 503 and body["status"] == "degraded"
        failing = {f["store"]: f for f in body["x-vendor-storage"]["failing"]}
        assert {"scripts", "bulk-data", "updates", "fault-triggers", "triggers",
                "faults"} <= set(failing), failing
        assert failing["faults"]["path"] == str(state) and failing["faults"]["since"] > 0
        assert failing["faults"]["kind"] == "full"
        warnings = [w for w in body["warnings"] if w["code"] == "storage_write_failing"]
        assert any(str(state) in w["message"] and "faults" in w["message"] for w in warnings)
        assert FAULT not in faults_by_code(gw)

        # space returns: healthy by itself, the fault catches up, writes work
        free(fs)
        wait_until(lambda: health(gw)[0] == 200 and health(gw)[1]["status"] == "healthy",
                   BUDGET_S, "/health healthy again")
        wait_until(lambda: FAULT in faults_by_code(gw), BUDGET_S, "the fault caught up")
        assert health(gw)[1]["x-vendor-storage"] == {
            "writable": True, "failing": [], "recoveries": health(gw)[1]["x-vendor-storage"][
                "recoveries"]}
        assert upload(gw, scripts_path, "ok.sh", 10).status == 201
        assert upload(gw, bulk_path, "ok.bin", 10).status == 201
        assert gw.request("POST", "/updates", {"id": "pkg_ok", "update_name": "y"}).status == 201
        assert fault_rule(gw, "NEVER_HOT").status == 201
        assert trigger(gw).status == 201
        assert leftovers(fs) == []
    finally:
        ros.close()
    log = (gw.log_path.read_text(errors="replace") if gw.log_path else "")
    # one ERROR line per failure streak of a store, not one per failed commit or retry
    assert 1 <= log.count("faults: writes fail") <= 2
    assert sum(" ERROR " in line for line in log.splitlines()) <= 12
