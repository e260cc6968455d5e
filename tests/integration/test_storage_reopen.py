"""Stores started on a full or read-only small tmpfs: each starts, books its failure in
storage health and resumes once the file system can be written (in process, no ROS;
tests/integration/test_storage_startup.py runs a real gateway)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from gateway.process.storage import StorageHealth, StorageWriteError
from gateway.settings.config import load
from tests.smallfs import fill, free, remount, small_tmpfs

NOW = 1_700_000_000.0


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "fs") as mounted:
        yield mounted


def failing(health: StorageHealth) -> dict[str, str]:
    return {f.store: f.kind for f in health.failing()}


def test_trigger_store_on_a_full_disk_opens_its_file_later(fs: Path) -> None:
    from gateway.push.store import TriggerStore

    fill(fs)
    health = StorageHealth()
    store = TriggerStore(fs / "triggers.db", health)  # does not raise
    assert store.pending and failing(health) == {"triggers": "full"}
    with pytest.raises(StorageWriteError) as caught:
        store.put("t1", "apps", "a", {"x": 1}, NOW, None)
    assert caught.value.insufficient and caught.value.store == "triggers"
    free(fs)
    store.put("t1", "apps", "a", {"x": 1}, NOW, None)
    assert not store.pending and health.failing() == []
    store.close()
    db = sqlite3.connect(fs / "triggers.db")
    assert [r[0] for r in db.execute("SELECT id FROM triggers")] == ["t1"]
    db.close()


def test_trigger_store_on_a_read_only_disk_lists_what_it_held(fs: Path) -> None:
    from gateway.push.store import TriggerStore

    first = TriggerStore(fs / "triggers.db")
    first.put("kept", "apps", "a", {"x": 1}, NOW, None)
    first.close()
    remount(fs, "ro")
    try:
        health = StorageHealth()
        store = TriggerStore(fs / "triggers.db", health)
        assert store.pending and failing(health) == {"triggers": "read-only"}
        assert [r["id"] for r in store.active()] == ["kept"]
        with pytest.raises(StorageWriteError):
            store.delete("kept")
    finally:
        remount(fs, "rw")
    store.delete("kept")
    assert store.ids() == [] and health.failing() == []
    store.close()


def test_refresh_tokens_read_revocations_read_only(fs: Path) -> None:
    from gateway.auth.store import RefreshStore, token_hash

    path = fs / "auth" / "refresh_tokens.sqlite3"
    first = RefreshStore(path)
    first.start_family("fam", token_hash("t"), "c", "viewer", NOW, NOW + 10, NOW + 100)
    first.revoke_family("fam", NOW, "test")
    first.close()
    remount(fs, "ro")
    try:
        store = RefreshStore(path)
        store.storage = health = StorageHealth()
        assert store.revoked_families(NOW) == {"fam": NOW + 100}  # start: the revocations hold
        assert failing(health) == {"refresh-tokens": "read-only"}
    finally:
        remount(fs, "rw")
    store.start_family("g", token_hash("g"), "c", "viewer", NOW, NOW + 10, NOW + 10)
    assert health.failing() == []
    store.close()
    fresh = RefreshStore(fs / "other" / "refresh_tokens.sqlite3")
    fresh.storage = health
    fill(fs)
    assert fresh.revoked_families(NOW) == {}  # a new file cannot be made: nothing revoked yet
    assert "refresh-tokens" in failing(health)


def test_uploads_script_runs_and_updates_start_on_a_read_only_disk(fs: Path) -> None:
    from gateway.scripts.containment import Containment
    from gateway.updates.provider import UpdateProviderPlugin
    from recorder.uploads import UploadStore

    health = StorageHealth()
    remount(fs, "ro")
    try:
        uploads = UploadStore(fs / "state" / "bulk_data", health)
        assert uploads.load() == 0
        Containment(fs / "state" / "script-runs", use_cgroup=False, storage=health)
        plugin = UpdateProviderPlugin()
        plugin.configure({})
        plugin.set_context(SimpleNamespace(settings=load(None, [f"state_dir={fs}/state"]),  # type: ignore[arg-type]
                                           storage=health))
        assert failing(health) == {"bulk-data": "read-only", "script-runs": "read-only",
                                   "updates": "read-only"}
    finally:
        remount(fs, "rw")
    assert sorted(health.probe()) == ["bulk-data", "script-runs", "updates"]
    plugin.register_update({"id": "later", "update_name": "x"})  # its directories made now
    assert plugin.list_updates({}) == ["later"] and health.failing() == []


def test_recorder_starts_once_its_directory_can_be_written(fs: Path) -> None:
    from recorder.config import RecorderConfig
    from recorder.service import Recorder

    cfg = RecorderConfig(enabled=True, root=fs / "rosbags")
    rec = Recorder(cfg, lambda: (0, {}))
    rec.writer.storage = health = StorageHealth()

    async def main() -> None:
        remount(fs, "ro")
        try:
            assert await rec.start() is True  # served; recording waits for the disk
            assert not rec.running and failing(health) == {"recordings": "read-only"}
        finally:
            remount(fs, "rw")
        for _ in range(600):
            if rec.running:
                break
            await asyncio.sleep(0.05)
        assert rec.running and health.failing() == []
        await rec.stop()

    asyncio.run(main())


def test_fault_store_restarted_on_a_full_disk_lists_and_keeps_its_faults(fs: Path) -> None:
    from gateway.faults.model import FaultRecord
    from gateway.faults.store import StoreBatch, open_store

    def body(code: str) -> bytes:
        return FaultRecord(code=code, severity=2, description="", status="CONFIRMED",
                           counter=-1, occurrence_count=1, first_ns=1, last_ns=1).to_json()

    store, lock = open_store(str(fs / "state"))
    store.write_batch(StoreBatch(faults=[("OLD", body("OLD"))]))
    store.close()
    assert lock is not None
    lock.release()
    fill(fs)
    health = StorageHealth()
    store, lock = open_store(str(fs / "state"), health)  # the -wal and -shm cannot be made
    assert store.waiting is not None and failing(health) == {"faults": "full"}
    assert set(store.load_faults()) == {"OLD"}  # read read-only
    store.write_batch(StoreBatch(faults=[("NEW", body("NEW"))]))  # held in memory
    free(fs)
    health.on_probe("faults", store.probe_retry)  # as the writer registers it
    assert health.probe() == ["faults"] and store.persistent and store.waiting is None
    store.close()
    assert lock is not None
    lock.release()
    again, lock = open_store(str(fs / "state"))
    assert set(again.load_faults()) == {"OLD", "NEW"}
    again.close()
    assert lock is not None
    lock.release()
