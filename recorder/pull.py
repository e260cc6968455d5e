"""`diag-gateway bag pull URL`: download a fault's recording, resuming an interrupted one.

The file is received into `<DIR>/<last URL segment>.part`; a `.part.json` beside it keeps the
URL and the server's ETag. A later pull of the same URL asks for the rest with
`Range: bytes=<have>-` and `If-Range: <etag>`: a 206 appends, a 200 (the recording changed)
starts over. When complete the file is renamed to the name in Content-Disposition.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import ssl
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import unquote, urlsplit

CHUNK = 256 * 1024
_FILENAME = re.compile(r'filename\*?=(?:UTF-8\'\')?"?([^";]+)"?', re.IGNORECASE)
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class PullError(Exception):
    """A download that cannot complete; the message says why."""


@dataclass
class Result:
    """A finished download."""

    path: Path
    size: int
    resumed_from: int


class Progress:
    """A one-line text progress bar on a stream (stderr)."""

    def __init__(self, out: TextIO, total: int | None, start: int = 0, width: int = 30) -> None:
        self.out = out
        self.total = total
        self.done = start
        self.start_bytes = start
        self.width = width
        self.t0 = time.monotonic()
        self._last = 0.0
        self._drawn: int | None = None  # bytes shown by the last redraw

    def update(self, n: int, force: bool = False) -> None:
        """Count n more bytes; redraw at most 10 times a second."""
        self.done += n
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        self._drawn = self.done
        rate = (self.done - self.start_bytes) / max(now - self.t0, 1e-6) / 1048576
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(frac * self.width)
            line = (f"\r[{bar:<{self.width}}] {frac * 100:5.1f}% "
                    f"{self.done / 1048576:.2f}/{self.total / 1048576:.2f} MiB "
                    f"{rate:.1f} MiB/s")
        else:
            line = f"\r{self.done / 1048576:.2f} MiB {rate:.1f} MiB/s"
        self.out.write(line)
        self.out.flush()

    def close(self) -> None:
        """Final redraw (unless the last one shows every byte already) and newline."""
        if self._drawn != self.done:
            self.update(0, force=True)
        self.out.write("\n")
        self.out.flush()


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PullError(f"{url!r} is not an http(s) URL")
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    return conn, path


def unreachable(url: str, exc: OSError) -> str:
    """The error of a request that got no answer: names the host:port (and the URL)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    reason = exc.strerror or str(exc) or type(exc).__name__
    hint = (": is the gateway running and listening there?"
            if isinstance(exc, ConnectionRefusedError) else "")
    return f"cannot reach {parts.hostname}:{port} ({reason}) for {url}{hint}"


def _filename(disposition: str | None, fallback: str) -> str:
    m = _FILENAME.search(disposition or "")
    name = unquote(m.group(1)) if m else fallback
    return os.path.basename(name.replace("\\", "/")) or fallback


def pull(url: str, out_dir: str | os.PathLike[str] = ".", token: str | None = None,
         progress: TextIO | None = sys.stderr, timeout: float = 30.0) -> Result:
    """Download url into out_dir (resuming a `.part` from an earlier attempt)."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    stem = unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]) or "download"
    stem = os.path.basename(stem)
    part = directory / f"{stem}.part"
    state_file = directory / f"{stem}.part.json"
    have = part.stat().st_size if part.exists() else 0
    etag = None
    saved: dict[str, str] = {}
    if have:
        try:
            saved = json.loads(state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = {}
        etag = saved.get("etag") if saved.get("url") == url else None
        if not etag:
            have = 0  # nothing proves the partial file is this recording
    headers = {"Accept": "*/*"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if have:
        headers["Range"] = f"bytes={have}-"
        headers["If-Range"] = etag or ""
    conn, path = _connection(url, timeout)
    try:
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
        except OSError as exc:
            raise PullError(unreachable(url, exc)) from None
        total: int | None
        if resp.status == 416 and have:
            # the .part already holds everything (interrupted just before the rename)
            resp.read()
            total, resumed = have, have
            name = saved.get("name") or stem
        elif resp.status in (200, 206):
            resumed = _check_start(resp, have)
            total = _total(resp, resumed)
            name = _filename(resp.getheader("Content-Disposition"), stem)
            state_file.write_text(json.dumps({"url": url, "etag": resp.getheader("ETag") or "",
                                              "name": name}), encoding="utf-8")
            _receive(resp, part, resumed, total, progress)
        else:
            raise PullError(_error_text(resp))
    finally:
        conn.close()
    size = part.stat().st_size
    if total is not None and size != total:
        raise PullError(f"incomplete download: {size} of {total} bytes; run the same command "
                        "again to resume")
    final = directory / name
    os.replace(part, final)
    state_file.unlink(missing_ok=True)
    return Result(final, size, resumed)


def _check_start(resp: http.client.HTTPResponse, have: int) -> int:
    if resp.status == 200:
        return 0
    m = _CONTENT_RANGE.match(resp.getheader("Content-Range") or "")
    if not m or int(m.group(1)) != have:
        raise PullError(f"the server answered an unexpected range "
                        f"({resp.getheader('Content-Range')!r}) for bytes={have}-")
    return have


def _total(resp: http.client.HTTPResponse, start: int) -> int | None:
    m = _CONTENT_RANGE.match(resp.getheader("Content-Range") or "")
    if m and m.group(3) != "*":
        return int(m.group(3))
    length = resp.getheader("Content-Length")
    return start + int(length) if length is not None else None


def _receive(resp: http.client.HTTPResponse, part: Path, start: int, total: int | None,
             progress: TextIO | None) -> None:
    bar = Progress(progress, total, start) if progress is not None else None
    mode = "r+b" if start and part.exists() else "wb"
    with open(part, mode) as f:
        f.seek(start)
        f.truncate()
        try:
            while chunk := resp.read(CHUNK):
                f.write(chunk)
                if bar is not None:
                    bar.update(len(chunk))
        except (OSError, http.client.HTTPException) as exc:
            raise PullError(f"connection lost after {f.tell()} bytes ({exc}); run the same "
                            "command again to resume") from None
        finally:
            f.flush()
            os.fsync(f.fileno())
            if bar is not None:
                bar.close()


def _error_text(resp: http.client.HTTPResponse) -> str:
    raw = resp.read(64 * 1024)
    try:
        body = json.loads(raw)
        detail = body.get("message") or body
    except ValueError:
        detail = raw.decode("utf-8", "replace")[:200]
    return f"HTTP {resp.status}: {detail}"


def main(url: str, out_dir: str, token: str | None = None) -> int:
    """CLI entry: 0 on success, 1 with a message on stderr otherwise."""
    try:
        result = pull(url, out_dir, token=token or os.environ.get("DIAG_GATEWAY_TOKEN"))
    except (PullError, OSError) as exc:
        print(f"diag-gateway bag pull: {exc}", file=sys.stderr)
        return 1
    note = f" (resumed at byte {result.resumed_from})" if result.resumed_from else ""
    print(f"{result.path} ({result.size} bytes){note}")
    return 0
