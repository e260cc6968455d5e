"""Every store on a full small tmpfs: StorageWriteError naming the directory and its free
space, nothing stored half, /health degraded; writes and health come back once space does.

In process (no ROS): the stores themselves, and the gateway app's upload handlers and /health
over aiohttp's test client. tests/integration/test_storage_full.py runs a real gateway.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.process.storage import StorageHealth, StorageWriteError
from gateway.settings.config import load
from tests.smallfs import fill, free, remount, small_tmpfs

NOW = 1_700_000_000.0


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "fs") as mounted:
        yield mounted


def on_disk(root: Path) -> list[str]:
    """Files (not directories) below root, the filler excepted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and p.name != ".filler")


def assert_full(err: StorageWriteError, store: str, directory: Path) -> None:
    assert err.store == store and err.insufficient, err
    assert str(directory) in err.message and "free there" in err.message, err.message
    assert err.free_bytes is not None and err.free_bytes < 64 * 1024


def test_fault_store_commit(fs: Path) -> None:
    from gateway.faults.store import FaultStore, StoreBatch

    health = StorageHealth()
    store = FaultStore(fs / "faults.db", health)
    store.write_batch(StoreBatch(faults=[("A", b"{}")]))
    fill(fs)
    big = [(f"F{i}", b"x" * 2000) for i in range(200)]
    with pytest.raises(StorageWriteError) as caught:
        store.write_batch(StoreBatch(faults=big))
    assert_full(caught.value, "faults", fs)
    assert [f.store for f in health.failing()] == ["faults"]
    assert not store.conn.in_transaction  # rolled back: the next commit can begin
    free(fs)
    store.write_batch(StoreBatch(faults=big))  # caught up once space is back
    assert health.failing() == [] and len(store.conn.execute(
        "SELECT code FROM faults").fetchall()) == 201
    store.close()


def test_trigger_store(fs: Path) -> None:
    from gateway.push.store import TriggerStore

    health = StorageHealth()
    store = TriggerStore(fs / "triggers.db", health)
    store.put("t0", "apps", "a", {"x": 1}, NOW, None)
    fill(fs)
    with pytest.raises(StorageWriteError) as caught:
        for i in range(50):
            store.put(f"t{i + 1}", "apps", "a", {"x": "y" * 4000}, NOW, None)
    assert_full(caught.value, "triggers", fs)
    free(fs)
    store.put("t99", "apps", "a", {"x": 1}, NOW, None)
    assert health.failing() == []
    store.db.close()


def test_refresh_token_store(fs: Path) -> None:
    from gateway.auth.store import RefreshStore, token_hash

    health = StorageHealth()
    store = RefreshStore(fs / "auth" / "refresh_tokens.sqlite3")
    store.storage = health
    store.start_family("f0", token_hash("a0"), "c", "viewer", NOW, NOW + 10, NOW + 10)
    fill(fs)
    with pytest.raises(StorageWriteError) as caught:
        for i in range(200):
            store.start_family(f"f{i + 1}", token_hash(f"a{i + 1}" + "x" * 3000), "c" * 2000,
                               "viewer", NOW, NOW + 10, NOW + 10)
    assert_full(caught.value, "refresh-tokens", fs / "auth")
    free(fs)
    store.start_family("g", token_hash("g"), "c", "viewer", NOW, NOW + 10, NOW + 10)
    assert health.failing() == []
    store.close()


def test_bulk_data_upload_leaves_nothing(fs: Path) -> None:
    from recorder.uploads import Upload, UploadStore

    health = StorageHealth()
    store = UploadStore(fs / "bulk_data", health)
    store.load()
    fill(fs)
    inc = store.begin("calib")
    with pytest.raises(StorageWriteError) as caught:
        for _ in range(100):
            inc.write(b"z" * 65536)
    assert_full(caught.value, "bulk-data", fs / "bulk_data")
    inc.abort()
    assert on_disk(fs) == [] and store.uploads == {}
    free(fs)
    inc = store.begin("calib")
    inc.write(b"ok")
    up = store.commit(inc, Upload("", "calib", "apps", "a", "f", "text/plain", 0, 1))
    assert store.get("calib", up.id) is not None and health.failing() == []


def test_script_upload_leaves_nothing(fs: Path) -> None:
    from gateway.scripts.catalog import UploadStore

    health = StorageHealth()
    store = UploadStore(fs / "scripts", None, health)
    fill(fs)
    with pytest.raises(StorageWriteError) as caught:
        store.save("components", "host", "big.sh", b"#" * 300_000, {})
    assert_full(caught.value, "scripts", fs / "scripts")
    assert on_disk(fs) == [] and store.load() == []
    free(fs)
    script = store.save("components", "host", "ok.sh", b"echo ok\n", {})
    assert [s.id for s in store.load()] == [script.id] and health.failing() == []


def test_a_read_only_file_system_is_insufficient_storage_too(fs: Path) -> None:
    from gateway.errors import storage_error
    from gateway.scripts.catalog import UploadStore

    health = StorageHealth()
    store = UploadStore(fs / "scripts", None, health)
    remount(fs, "ro")
    try:
        with pytest.raises(StorageWriteError) as caught:
            store.save("components", "host", "a.sh", b"echo\n", {})
    finally:
        remount(fs, "rw")
    err = caught.value
    assert err.kind == "read-only" and "read-only" in err.message
    assert storage_error(err).status == 507
    assert health.probe() == ["scripts"]  # writable again: the probe says so


def test_update_registration_is_not_half_registered(fs: Path) -> None:
    from gateway.updates.provider import UpdateProviderPlugin

    health = StorageHealth()
    plugin = UpdateProviderPlugin()
    plugin.configure({})
    plugin.set_context(SimpleNamespace(settings=load(None, [f"state_dir={fs}"]),  # type: ignore[arg-type]
                                       storage=health))
    plugin.register_update({"id": "first", "update_name": "x"})
    fill(fs)
    with pytest.raises(StorageWriteError) as caught:
        plugin.register_update({"id": "second", "update_name": "y" * 200_000})
    assert_full(caught.value, "updates", fs / "updates")
    assert plugin.list_updates({}) == ["first"]
    assert on_disk(fs) == ["updates/registry.json"]  # no temporary file left behind
    with pytest.raises(StorageWriteError):
        plugin.delete_update("first")  # not forgotten either while the index cannot change
    assert plugin.list_updates({}) == ["first"]
    free(fs)
    plugin.register_update({"id": "second", "update_name": "y"})
    assert plugin.list_updates({}) == ["first", "second"] and health.failing() == []


def test_fault_trigger_rules_file(fs: Path) -> None:
    from gateway.push.fault_engine import FaultTriggerEngine
    from gateway.push.fault_rules import parse_rule

    health = StorageHealth()
    state = SimpleNamespace(settings=load(None, [f"fault_triggers.storage.path={fs}/rules.json"]),
                            storage=health)
    engine = FaultTriggerEngine(state, SimpleNamespace(), SimpleNamespace())  # type: ignore[arg-type]
    body = {"data_name": "t", "operator": ">", "threshold": 1, "fault_code": "HOT",
            "description": "d" * 300_000}
    engine.rules["r1"] = parse_rule(body, "r1", "app")
    fill(fs)
    with pytest.raises(StorageWriteError) as caught:
        engine._save(strict=True)
    assert_full(caught.value, "fault-triggers", fs)
    engine._save()  # a background save: logged and booked, not raised
    assert on_disk(fs) == [] and [f.store for f in health.failing()] == ["fault-triggers"]
    free(fs)
    engine._save(strict=True)
    assert json.loads((fs / "rules.json").read_text())[0]["fault_code"] == "HOT"
    assert health.failing() == []


def test_recorder_bag_write(fs: Path) -> None:
    from recorder.flusher import BagWriterThread, WriteJob
    from recorder.index import INDEX_NAME, Recording

    health = StorageHealth()
    done: list[tuple[Any, str | None]] = []
    writer = BagWriterThread(fs / "rosbags", 4, lambda rec, error, job: done.append((rec, error)))
    writer.storage = health
    (fs / "rosbags").mkdir()
    fill(fs)
    job = WriteJob(Recording("rec_20260101T000000000Z_aaaaaa", "mcap", "", 1, 0, 2,
                             fault_codes=["A"]), [], [])
    writer._pending_writes = 1
    writer._write(job)
    [(rec, error)] = done
    assert rec is None and error and "free there" in error
    assert [f.store for f in health.failing()] == ["recordings"]
    assert list((fs / "rosbags").iterdir()) == []  # no partial bag directory left
    writer._do("index", b"{}" * 100_000)
    assert [f.store for f in health.failing()] == ["recordings"]
    assert on_disk(fs) == []
    free(fs)
    writer._do("index", b"{}")
    assert health.failing() == [] and on_disk(fs) == [f"rosbags/{INDEX_NAME}"]


# The gateway app in process: handlers, error mapping, /health --------------------------------

def app_scenario(fs: Path, managed: Path) -> dict[str, Any]:
    """Script and bulk-data uploads and /health of an in-process gateway on a full disk,
    then after the space came back."""
    from aiohttp import FormData
    from aiohttp.test_utils import TestClient, TestServer

    from gateway.bulk_data.keys import BULK_DATA
    from gateway.http.state import STATE
    from tests.schemacheck.test_schema_patterns import _app

    app = _app(str(managed), f"state_dir={fs}", "scripts.allow_root=true",
               "bulk_data.categories=[calib]")
    state = app[STATE]
    out: dict[str, Any] = {}

    def form(name: str, size: int) -> FormData:
        data = FormData()
        data.add_field("file", b"#" * size, filename=name)
        return data

    async def go() -> None:
        await app[BULK_DATA].start()  # no ROS side: the upload store alone
        async with TestClient(TestServer(app)) as client:
            fill(fs)
            up = await client.post("/api/v1/components/host/scripts", data=form("a.sh", 300_000))
            out["script"] = (up.status, await up.json())
            up = await client.post("/api/v1/components/host/bulk-data/calib",
                                   data=form("c.bin", 300_000))
            out["bulk"] = (up.status, await up.json())
            health = await client.get("/api/v1/health")
            out["health"] = (health.status, await health.json())
            out["listed"] = (await (await client.get(
                "/api/v1/components/host/scripts")).json())["items"]
            out["bulk_listed"] = (await (await client.get(
                "/api/v1/components/host/bulk-data/calib")).json())["items"]
            out["files"] = on_disk(fs)
            free(fs)
            state.storage.probe()  # what the probe loop does every few seconds
            health = await client.get("/api/v1/health")
            out["healed"] = (health.status, await health.json())
            up = await client.post("/api/v1/components/host/scripts", data=form("b.sh", 10))
            out["script_after"] = up.status

    asyncio.run(go())
    return out


def test_handlers_answer_507_and_health_degrades(fs: Path, tmp_path: Path) -> None:
    managed = tmp_path / "gw"
    managed.mkdir()
    out = app_scenario(fs, managed)
    for key, store, where in (("script", "scripts", fs / "scripts"),
                              ("bulk", "bulk-data", fs / "bulk_data")):
        status, body = out[key]
        assert status == 507, body
        assert body["error_code"] == "vendor-error"
        assert body["vendor_code"] == "x-vendor-insufficient-storage"
        assert str(where) in body["message"] and "free there" in body["message"]
        assert body["parameters"]["store"] == store
    assert not any(s["id"].startswith("script_") for s in out["listed"])
    assert out["bulk_listed"] == [] and out["files"] == []
    status, health = out["health"]
    assert status == 503 and health["status"] == "degraded"
    failing = {f["store"]: f for f in health["x-vendor-storage"]["failing"]}
    assert {"scripts", "bulk-data"} <= set(failing)
    assert failing["scripts"]["path"] == str(fs / "scripts") and failing["scripts"]["since"]
    assert any(w["code"] == "storage_write_failing" and "scripts" in w["message"]
               for w in health["warnings"])
    status, healed = out["healed"]
    assert status == 200 and healed["status"] == "healthy", healed
    assert healed["x-vendor-storage"]["writable"] is True
    assert out["script_after"] == 201


def test_a_fault_clear_that_cannot_be_committed_is_undone(fs: Path) -> None:
    from gateway.faults.model import CONFIRMED, FaultRecord
    from gateway.faults.store import FaultStore, StoreBatch
    from gateway.faults.stream import FaultStream, SseSlots
    from tests.faults.test_fault_clear_hook import service

    state, svc = service()
    store = FaultStore(fs / "faults.db", state.storage)
    codes = [f"BIG_{i}" for i in range(20)]
    svc.faults = {c: FaultRecord(code=c, severity=2, description="d" * 20_000,
                                 status=CONFIRMED, counter=-1, occurrence_count=1, first_ns=1,
                                 last_ns=1, sources=["/n/big"]) for c in codes}
    store.write_batch(StoreBatch(faults=[(f.code, f.to_json()) for f in svc.faults.values()]))
    svc.writer.attach(store)
    svc.stream = FaultStream(SseSlots(2), 30.0)
    fill(fs)

    async def scenario() -> None:
        assert svc.clear(codes) == codes  # applied in memory at once
        with pytest.raises(StorageWriteError) as caught:
            await svc.settled()
        assert_full(caught.value, "faults", fs)
        # answered only once memory holds what the database does: nothing cleared half
        assert {f.status for f in svc.faults.values()} == {CONFIRMED}
        assert [f.store for f in state.storage.failing()] == ["faults"]
        free(fs)
        assert svc.clear(codes) == codes
        await svc.settled()
        assert state.storage.failing() == []
        await svc.writer.close()

    asyncio.run(scenario())
