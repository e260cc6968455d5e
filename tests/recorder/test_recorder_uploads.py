"""The bulk-data upload store: complete uploads move into place, anything else leaves nothing."""

from __future__ import annotations

from pathlib import Path

from recorder.uploads import Upload, UploadStore


def entries(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def new(store: UploadStore, name: str = "a.txt") -> Upload:
    return Upload("", "docs", "apps", "app1", name, "text/plain", 0, 1_000, "d", {"k": 1})


def test_commit_moves_the_upload_into_place_and_load_finds_it(tmp_path: Path) -> None:
    store = UploadStore(tmp_path)
    store.load()
    inc = store.begin("docs")
    inc.write(b"hello ")
    inc.write(b"world")
    up = store.commit(inc, new(store))
    assert up.id and up.size == 11
    assert store.path(up).read_bytes() == b"hello world"
    assert not any(".incoming-" in e for e in entries(tmp_path))
    again = UploadStore(tmp_path)
    assert again.load() == 0
    assert again.get("docs", up.id) == up and again.list("docs") == [up]
    assert again.list("other") == []


def test_abort_and_crash_leftovers_leave_nothing(tmp_path: Path) -> None:
    store = UploadStore(tmp_path)
    inc = store.begin("docs")
    inc.write(b"partial")
    inc.abort()
    assert entries(tmp_path) == ["docs"]
    crashed = store.begin("docs")  # never committed nor aborted (process killed)
    crashed.write(b"x")
    crashed.finish()
    again = UploadStore(tmp_path)
    assert again.load() == 1 and entries(tmp_path) == ["docs"]


def test_remove_unindexes(tmp_path: Path) -> None:
    store = UploadStore(tmp_path)
    up = store.commit(store.begin("docs"), new(store))
    directory = store.remove(up)
    assert directory == tmp_path / "docs" / up.id and store.get("docs", up.id) is None
