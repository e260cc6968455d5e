"""The SQLite store: round trips, dedup keys, state-dir lock, durability across SIGKILL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gateway.faults.model import CONFIRMED, FaultRecord
from gateway.faults.store import DB_NAME, FaultStore, open_store

ROOT = Path(__file__).resolve().parents[2]


def record(code: str) -> FaultRecord:
    return FaultRecord(code=code, severity=2, description="d", status=CONFIRMED, counter=-1,
                       occurrence_count=1, first_ns=1, last_ns=2, sources=["/a"])


def test_round_trip(tmp_path: Path) -> None:
    store = FaultStore(tmp_path / DB_NAME)
    with store.transaction():
        store.put_faults([record("A"), record("B")])
        store.put_dedup([("r", 1), ("r", 2), ("q", 7)], at_ns=100)
        store.set_meta("event_seq", 41)
    store.put_snapshots("A", [{"topic": "/t", "n": 1}, {"topic": "/u", "n": 2}])
    store.close()
    again = FaultStore(tmp_path / DB_NAME)
    assert again.load_faults() == {"A": record("A"), "B": record("B")}
    assert again.load_dedup() == {"r": {1, 2}, "q": {7}}
    assert again.get_meta("event_seq") == 41 and again.get_meta("nope", 3) == 3
    assert [f["topic"] for f in again.snapshots("A")] == ["/t", "/u"]
    assert again.codes_with_snapshots() == {"A"}
    again.delete_snapshots(["A"])
    assert again.snapshots("A") == []
    again.close()


def test_rollback_on_error(tmp_path: Path) -> None:
    store = FaultStore(tmp_path / DB_NAME)
    try:
        with store.transaction():
            store.put_faults([record("A")])
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert store.load_faults() == {}
    store.close()


def test_dedup_pruning(tmp_path: Path) -> None:
    store = FaultStore(tmp_path / DB_NAME)
    with store.transaction():
        store.put_dedup([("r", 1)], at_ns=100)
        store.put_dedup([("r", 2)], at_ns=200)
    assert store.dedup_keys_before(150) == [("r", 1)]
    assert store.prune_dedup(150) == 1
    assert store.load_dedup() == {"r": {2}}
    store.close()


def test_second_gateway_falls_back_to_memory(tmp_path: Path) -> None:
    first, lock = open_store(str(tmp_path / "state"))
    second, lock2 = open_store(str(tmp_path / "state"))
    assert first.persistent and lock is not None
    assert not second.persistent and lock2 is None
    second.close()
    first.close()
    lock.release()
    third, lock3 = open_store(str(tmp_path / "state"))
    assert third.persistent and lock3 is not None
    third.close()
    lock3.release()


WRITER = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from gateway.faults.model import FaultRecord
from gateway.faults.store import open_store
store, lock = open_store(sys.argv[1])
for i in range(200):
    with store.transaction():
        store.put_faults([FaultRecord(code=f"F{i}", severity=2, description="", status="CONFIRMED",
                                      counter=-1, occurrence_count=1, first_ns=i, last_ns=i)])
        store.put_dedup([("r", i)], at_ns=i)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_committed_writes_survive_sigkill(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = subprocess.run([sys.executable, "-c", WRITER, str(state), str(ROOT)], timeout=60)
    assert proc.returncode == -9
    store, lock = open_store(str(state))  # the killed process's lock is gone with it
    assert lock is not None
    assert len(store.load_faults()) == 200
    assert store.load_dedup() == {"r": set(range(200))}
    store.close()
    lock.release()
