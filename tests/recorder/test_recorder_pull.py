"""`bag pull`: download with a progress bar; an interrupted download resumes with Range."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from recorder.pull import PullError, pull

BODY = bytes(range(256)) * 4000  # ~1 MB
ETAG = '"rec_x-1024000"'


class Server:
    """Serves BODY like the gateway does; cut_at makes the next full answer stop early."""

    def __init__(self) -> None:
        self.cut_at: int | None = None
        self.requests: list[dict[str, str]] = []
        self.etag = ETAG
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(dict(self.headers))
                rng = self.headers.get("Range")
                start = 0
                if rng and self.headers.get("If-Range") == outer.etag:
                    start = int(rng.split("=")[1].rstrip("-"))
                    if start >= len(BODY):
                        self.send_response(416)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(BODY) - 1}/{len(BODY)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(BODY) - start))
                self.send_header("ETag", outer.etag)
                self.send_header("Content-Disposition", "attachment; filename=rec_x.mcap")
                self.end_headers()
                end = len(BODY)
                if outer.cut_at is not None:
                    end, outer.cut_at = outer.cut_at, None
                self.wfile.write(BODY[start:end])
                self.wfile.flush()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = (f"http://127.0.0.1:{self.httpd.server_address[1]}"
                    "/api/v1/apps/a/bulk-data/rosbags/FAULT_X")

    def __enter__(self) -> Server:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as s:
        yield s


def test_download_names_the_file_from_content_disposition(server: Server, tmp_path: Path
                                                          ) -> None:
    bar = io.StringIO()
    result = pull(server.url, tmp_path, progress=bar)
    assert result.path == tmp_path / "rec_x.mcap" and result.path.read_bytes() == BODY
    assert result.resumed_from == 0
    assert "100.0%" in bar.getvalue() and "[" in bar.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec_x.mcap"]


def test_an_interrupted_download_resumes_with_range(server: Server, tmp_path: Path) -> None:
    server.cut_at = 300_000
    with pytest.raises(PullError, match="again to resume"):
        pull(server.url, tmp_path, progress=None)
    assert (tmp_path / "FAULT_X.part").stat().st_size == 300_000
    result = pull(server.url, tmp_path, progress=None)
    assert server.requests[-1]["Range"] == "bytes=300000-"
    assert server.requests[-1]["If-Range"] == ETAG
    assert result.resumed_from == 300_000 and result.path.read_bytes() == BODY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec_x.mcap"]


def test_a_changed_recording_starts_over(server: Server, tmp_path: Path) -> None:
    server.cut_at = 100_000
    with pytest.raises(PullError):
        pull(server.url, tmp_path, progress=None)
    server.etag = '"rec_y-1024000"'  # the fault's newest recording is another one now
    result = pull(server.url, tmp_path, progress=None)
    assert result.resumed_from == 0 and result.path.read_bytes() == BODY


def test_a_complete_part_file_is_finished(server: Server, tmp_path: Path) -> None:
    server.cut_at = len(BODY)  # everything arrived, but "the process died" before the rename
    pull(server.url, tmp_path, progress=None)
    (tmp_path / "rec_x.mcap").rename(tmp_path / "FAULT_X.part")
    (tmp_path / "FAULT_X.part.json").write_text(
        f'{{"url": "{server.url}", "etag": {ETAG!r}, "name": "rec_x.mcap"}}'.replace("'", ""))
    result = pull(server.url, tmp_path, progress=None)
    assert result.path.name == "rec_x.mcap" and result.path.read_bytes() == BODY


def test_errors_are_reported(tmp_path: Path) -> None:
    with pytest.raises(PullError, match="not an http"):
        pull("ftp://x/y", tmp_path, progress=None)
