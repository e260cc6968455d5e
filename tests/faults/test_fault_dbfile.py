"""The fault store when its database cannot be opened at start: in memory, booked in storage
health, opened (and memory merged into it) by a later write or a storage probe."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import orjson

from gateway.faults.dbfile import MEMORY, connect, merge, seed
from gateway.faults.model import FaultRecord
from gateway.faults.store import DB_NAME, STORE, FaultStore, StoreBatch, open_store
from gateway.faults.writer import StoreWriter
from gateway.process.storage import StorageHealth


def body(code: str) -> bytes:
    return FaultRecord(code=code, severity=2, description="", status="CONFIRMED", counter=-1,
                       occurrence_count=1, first_ns=1, last_ns=1).to_json()


def rows(conn: sqlite3.Connection, table: str) -> list[tuple[object, ...]]:
    return sorted(conn.execute(f"SELECT * FROM {table}").fetchall())


def test_merge_memory_wins_keys_add_up_event_ids_stay_above() -> None:
    src, dst = connect(MEMORY), connect(MEMORY)
    src.executemany("INSERT INTO faults VALUES (?, ?)", [("A", b"new"), ("B", b"b")])
    dst.executemany("INSERT INTO faults VALUES (?, ?)", [("A", b"old"), ("C", b"c")])
    src.execute("INSERT INTO snapshots VALUES ('A', 0, x'01')")
    dst.executemany("INSERT INTO snapshots VALUES (?, ?, ?)",
                    [("A", 0, b"o"), ("A", 1, b"o"), ("C", 0, b"c")])
    src.execute("INSERT INTO dedup VALUES ('r', 2, 20)")
    dst.execute("INSERT INTO dedup VALUES ('r', 1, 10)")
    src.executemany("INSERT INTO meta VALUES (?, ?)", [("event_seq", b"100"),
                                                       ("correlation", b"{}")])
    dst.executemany("INSERT INTO meta VALUES (?, ?)", [("event_seq", b"500"),
                                                       ("correlation", b"[1]")])
    assert merge(src, dst) == 2
    assert rows(dst, "faults") == [("A", b"new"), ("B", b"b"), ("C", b"c")]
    assert rows(dst, "snapshots") == [("A", 0, b"\x01"), ("C", 0, b"c")]
    assert rows(dst, "dedup") == [("r", 1, 10), ("r", 2, 20)]
    assert dict(rows(dst, "meta")) == {"event_seq": b"500", "correlation": b"{}"}
    src.execute("UPDATE meta SET value = x'363030' WHERE key = 'event_seq'")  # b"600"
    merge(src, dst)
    assert dict(rows(dst, "meta"))["event_seq"] == b"600"
    # a fault unchanged since it was seeded from dst stays as dst has it now (a newer WAL)
    dst.execute("UPDATE faults SET body = x'4e' WHERE code = 'B'")
    assert merge(src, dst, seeded={"B": b"b"}) == 1
    assert rows(dst, "faults") == [("A", b"new"), ("B", b"N"), ("C", b"c")]


def test_seed_reads_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    disk = connect(str(path))
    disk.execute("INSERT INTO faults VALUES ('OLD', x'7b7d')")
    disk.close()
    memory = connect(MEMORY)
    assert seed(memory, path) == {"OLD": b"{}"} and rows(memory, "faults") == [("OLD", b"{}")]
    assert seed(memory, tmp_path / "absent.db") == {}


def blocked_state_dir(tmp_path: Path) -> Path:
    """A state directory that cannot be created: a file stands where it should be."""
    state = tmp_path / "state"
    state.write_text("not a directory")
    return state


def test_unopenable_state_dir_keeps_faults_in_memory_until_it_opens(tmp_path: Path) -> None:
    state = blocked_state_dir(tmp_path)
    health = StorageHealth()
    store, lock = open_store(str(state), health)
    assert lock is None and not store.persistent and store.waiting is not None
    assert [f.store for f in health.failing()] == [STORE]
    assert health.failing()[0].directory == str(state)
    store.write_batch(StoreBatch(faults=[("HELD", body("HELD"))], dedup=[("rep", 7)], at_ns=5,
                                 meta={"event_seq": orjson.dumps(40)}))  # memory: no error
    assert store.load_faults().keys() == {"HELD"} and not store.persistent
    store.waiting.next_try_s = 0.0
    store.write_batch(StoreBatch(faults=[("HELD2", body("HELD2"))]))  # a due retry fails: memory
    assert store.waiting.attempts == 1 and [f.store for f in health.failing()] == [STORE]
    state.unlink()  # the directory can be made now
    assert store.attach() is False  # not due yet: at most once a second from writes
    assert store.attach(force=True) is True
    assert store.persistent and store.waiting is None and store.lock is not None
    assert health.failing() == []
    store.write_batch(StoreBatch(faults=[("AFTER", body("AFTER"))]))
    store.close()
    store.lock.release()
    again, lock2 = open_store(str(state))
    assert again.persistent and set(again.load_faults()) == {"HELD", "HELD2", "AFTER"}
    assert again.load_dedup() == {"rep": {7}} and again.get_meta("event_seq") == 40
    again.close()
    assert lock2 is not None
    lock2.release()


def test_a_database_that_is_not_one_does_not_stop_the_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / DB_NAME).write_bytes(b"this is not a SQLite database" * 100)
    health = StorageHealth()
    store, lock = open_store(str(state), health)
    assert not store.persistent and store.waiting is not None and lock is not None
    assert health.failing()[0].store == STORE
    assert "not a database" in health.failing()[0].reason
    store.write_batch(StoreBatch(faults=[("F", body("F"))]))  # kept in memory
    assert set(store.load_faults()) == {"F"}
    assert store.attach(force=True) is False  # the file is still no database
    store.close()
    lock.release()


def test_a_storage_probe_opens_the_database_on_the_writer_thread(tmp_path: Path) -> None:
    state = blocked_state_dir(tmp_path)
    health = StorageHealth()

    async def main() -> None:
        writer = StoreWriter()
        store = await writer.open(str(state), health)
        assert writer.holding()
        await writer.call(FaultStore.write_batch, StoreBatch(faults=[("P", body("P"))]))
        assert await asyncio.to_thread(health.probe) == []  # the directory is still a file
        state.unlink()
        assert await asyncio.to_thread(health.probe) == [STORE]
        assert not writer.holding() and store.persistent and health.failing() == []
        await writer.close()

    asyncio.run(main())
    again, lock = open_store(str(state))
    assert set(again.load_faults()) == {"P"}
    again.close()
    assert lock is not None
    lock.release()


def test_probe_runs_a_store_retry_instead_of_booking_it_writable(tmp_path: Path) -> None:
    from gateway.process.storage import StorageWriteError

    health = StorageHealth()
    health.failed(StorageWriteError("s", tmp_path, OSError(28, "No space left on device")))
    calls = []
    health.on_probe("s", lambda: calls.append(1))  # books nothing: still failing
    assert health.probe() == [] and calls == [1]
    assert [f.store for f in health.failing()] == ["s"]
    health.on_probe("s", lambda: health.ok("s"))
    assert health.probe() == ["s"] and health.failing() == []
    assert health.check("t", tmp_path) is True and health.failing() == []
