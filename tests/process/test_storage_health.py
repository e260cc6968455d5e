"""Storage health and storage errors: classification, messages, the registry, the mapping."""

from __future__ import annotations

import errno
import logging
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import make_mocked_request

from gateway.errors import INSUFFICIENT_STORAGE, os_error, storage_error
from gateway.http.middleware import error_answer
from gateway.plugins.calls import map_error
from gateway.process.storage import (
    FAILING,
    FULL,
    READ_ONLY,
    StorageHealth,
    StorageWriteError,
    failure_kind,
    probe_write,
    size_text,
)

NOW = 1_700_000_000_000_000_000


def enospc(path: str = "/data/state/x") -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", path)


def sqlite_error(code: int) -> sqlite3.Error:
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize("exc, kind", [
    (enospc(), FULL),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), FULL),
    (OSError(errno.EROFS, "Read-only file system"), READ_ONLY),
    (OSError(errno.EIO, "Input/output error"), FAILING),
    (OSError(errno.EACCES, "Permission denied"), FAILING),
    (sqlite_error(13), FULL),
    (sqlite_error(8), READ_ONLY),
    (sqlite_error(10 | (3 << 8)), FAILING),  # SQLITE_IOERR_WRITE
    (sqlite_error(19), None),  # a constraint: not storage
    (ConnectionResetError(errno.ECONNRESET, "reset"), None),
    (TimeoutError(), None),
    (ValueError("x"), None),
])
def test_failure_kind(exc: BaseException, kind: str | None) -> None:
    assert failure_kind(exc) == kind


def test_size_text() -> None:
    assert [size_text(n) for n in (0, 1023, 1536, 5 << 20, None)] == \
        ["0 B", "1023 B", "1.5 KiB", "5.0 MiB", "unknown"]


def test_error_names_store_directory_cause_and_free_space(tmp_path: Path) -> None:
    err = StorageWriteError("scripts", tmp_path, enospc())
    assert err.insufficient and err.kind == FULL
    assert str(tmp_path) in err.message and "No space left on device" in err.message
    assert "free there" in err.message and err.free_bytes is not None
    assert err.parameters()["store"] == "scripts"
    ro = StorageWriteError("faults", tmp_path / "gone" / "deeper",
                           OSError(errno.EROFS, "Read-only file system"))
    assert ro.insufficient and "read-only" in ro.message
    assert ro.free_bytes is not None  # measured on the nearest existing parent


def test_registry_books_a_streak_once_and_recovers(caplog: pytest.LogCaptureFixture,
                                                  tmp_path: Path) -> None:
    health = StorageHealth()
    err = StorageWriteError("faults", tmp_path, enospc())
    with caplog.at_level(logging.INFO):
        for i in range(5):
            health.failed(err, NOW + i)
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
    [f] = health.failing()
    assert (f.store, f.since_ns, f.last_ns, f.failures) == ("faults", NOW, NOW + 4, 5)
    body = health.health()
    assert body["writable"] is False and body["failing"][0]["path"] == str(tmp_path)
    [warning] = health.warnings()
    assert warning["code"] == "storage_write_failing" and str(tmp_path) in warning["message"]
    assert set(warning) == {"code", "message", "entity_ids", "ros_node_fqns", "peer_names"}
    health.ok("faults", NOW + 10)
    assert health.failing() == [] and health.health()["writable"] is True
    assert health.recoveries == 1


def test_writing_wraps_storage_errors_and_passes_others(tmp_path: Path) -> None:
    health = StorageHealth()
    with pytest.raises(StorageWriteError) as caught, health.writing("bulk-data", tmp_path):
        raise enospc()
    assert caught.value.store == "bulk-data" and health.failing()[0].store == "bulk-data"
    with pytest.raises(sqlite3.IntegrityError), health.writing("triggers", tmp_path):
        raise sqlite3.IntegrityError("UNIQUE")
    assert [f.store for f in health.failing()] == ["bulk-data"]
    with health.writing("bulk-data", tmp_path):
        pass  # a write that succeeds: writable again
    assert health.failing() == []


def test_probe_clears_a_store_whose_directory_takes_writes_again(tmp_path: Path) -> None:
    health = StorageHealth()
    health.failed(StorageWriteError("recordings", tmp_path / "not-yet", enospc()))
    assert probe_write(tmp_path) and health.probe() == ["recordings"]
    assert health.failing() == [] and list(tmp_path.iterdir()) == []  # the probe file is gone


def body(err: Any) -> dict[str, Any]:
    return err.body("vendor")  # type: ignore[no-any-return]


def test_storage_error_is_507_vendor_error_with_path_and_free_space(tmp_path: Path) -> None:
    err = storage_error(StorageWriteError("scripts", tmp_path, enospc()))
    out = body(err)
    assert err.status == 507
    assert out["error_code"] == "vendor-error"
    assert out["vendor_code"] == INSUFFICIENT_STORAGE  # the vendor word is "vendor" here
    assert out["parameters"]["path"] == str(tmp_path)
    assert isinstance(out["parameters"]["free_bytes"], int)
    io = storage_error(StorageWriteError("scripts", tmp_path, OSError(errno.EIO, "I/O")))
    assert io.status == 500 and body(io)["error_code"] == "internal-error"


def test_unhandled_os_errors_are_never_resource_not_found() -> None:
    full = os_error(enospc("/data/state/bulk/x"))
    assert full.status == 507 and "/data/state/bulk" in full.message
    eio = os_error(OSError(errno.EIO, "Input/output error", "/data/x"))
    assert eio.status == 500 and eio.error_code == "internal-error"
    assert "Input/output error" in eio.message and "/data/x" in eio.message
    bare = os_error(OSError("something"))
    assert bare.status == 500 and bare.error_code == "internal-error"


@pytest.mark.parametrize("exc, status, code", [
    (enospc(), 507, "vendor-error"),
    (OSError(errno.EIO, "Input/output error", "/x"), 500, "internal-error"),
    (PermissionError(errno.EACCES, "Permission denied", "/x"), 500, "internal-error"),
    (RuntimeError("boom"), 500, "resource-not-found"),  # the spec's rule 1 for the rest
])
def test_middleware_renders_os_errors_honestly(exc: Exception, status: int, code: str) -> None:
    request = make_mocked_request("POST", "/api/v1/components/c/scripts")
    resp = error_answer(request, exc, "vendor")
    out = orjson.loads(resp.body)  # type: ignore[attr-defined]
    assert (resp.status, out["error_code"]) == (status, code)
    if status == 507:
        assert out["vendor_code"] == "x-vendor-insufficient-storage"
        assert "/data/state" in out["message"]


def test_a_plugin_whose_disk_is_full_answers_507(tmp_path: Path) -> None:
    err = map_error(StorageWriteError("updates", tmp_path, enospc()), "update_provider", None)
    assert err.status == 507 and str(tmp_path) in err.message
    raw = map_error(enospc(str(tmp_path / "registry.json")), "update_provider", None)
    assert raw.status == 507
    other = map_error(RuntimeError("x"), "update_provider", None)
    assert other.status == 500 and other.message == "Plugin threw exception"
