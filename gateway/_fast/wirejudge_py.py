"""Whether a chunk is one whole simple HTTP/1.1 GET the wire path may answer: one pass over
its bytes (compiled as wirejudge_c; http/hotwire.py `_judge` is the plain reference).

A robot answers each fan-out read of its primary after sleeping in between: its caches are
cold, and the plain judge's string calls cost it about ten times their warm cost. One scan
of the bytes in C touches far less. The verdict is the reference's exactly
(tests/fast/test_wirejudge.py runs both twins against it):

- at most MAX_CHUNK bytes, `GET <target> HTTP/1.1\\r\\n`, the target visible ASCII starting
  with `/`, then header lines `<token>:<value>\\r\\n` (value: tab, space to `~`, obs-text),
  at most MAX_HEADERS, then the blank line, which ends the chunk;
- no header name twice (case-insensitive), a `Host`, no `Range`, `Expect`, `If-*`,
  `Content-Length`, `Transfer-Encoding` or `Upgrade`, and `Connection` only as
  `keep-alive` (any case, spaces and tabs around);

then the target as str, else None.
"""

from __future__ import annotations

MAX_CHUNK = 8192
MAX_HEADERS = 64
_VERSION = b" HTTP/1.1\r\n"
_END = b"\r\n\r\n"
# Names that send a request to the generic path (lower case; `if-` is a prefix).
_ASIDE = (b"range", b"expect", b"content-length", b"transfer-encoding", b"upgrade")


def _token(c):
    """A tchar of RFC 9110."""
    return (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122
            or c in (33, 35, 36, 37, 38, 39, 42, 43, 45, 46, 94, 95, 96, 124, 126))


def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


def _same(data, a, b, n):
    """The n bytes at a and at b are equal ignoring ASCII case."""
    for k in range(n):
        if _lower(data[a + k]) != _lower(data[b + k]):
            return False
    return True


def _named(data, at, n, name):
    """The n bytes at `at` are `name` (lower case) ignoring ASCII case."""
    if n != len(name):
        return False
    for k in range(n):
        if _lower(data[at + k]) != name[k]:
            return False
    return True


def _has(data, n, at, lit):
    """The bytes at `at` (of the n) are lit."""
    if at < 0 or at + len(lit) > n:
        return False
    for k in range(len(lit)):
        if data[at + k] != lit[k]:
            return False
    return True


def _seen(data, first, start, length):
    """A header line between first and start (all checked) has the name at start."""
    p = first
    while p < start:
        end = p
        while data[end] != 58:  # ':'
            end += 1
        if end - p == length and _same(data, p, start, length):
            return True
        while data[end] != 10:  # the line's '\n'
            end += 1
        p = end + 1
    return False


def _keep_alive(data, start, end):
    """The value between start and end is `keep-alive` (any case, spaces and tabs around)."""
    while start < end and data[start] in (32, 9):
        start += 1
    while end > start and data[end - 1] in (32, 9):
        end -= 1
    return _named(data, start, end - start, b"keep-alive")


def judge(data):
    """The target of a chunk that is exactly one simple bodiless HTTP/1.1 GET; else None."""
    n = len(data)
    if n > MAX_CHUNK or not _has(data, n, 0, b"GET /") or not _has(data, n, n - 4, _END):
        return None
    i = 4
    while i < n and 33 <= data[i] <= 126:
        i += 1
    target_end = i
    if not _has(data, n, i, _VERSION):
        return None
    pos = i + len(_VERSION)
    first = pos
    count = 0
    host = False
    while pos < n - 2:
        start = pos
        while pos < n and _token(data[pos]):
            pos += 1
        length = pos - start
        if length == 0 or pos >= n or data[pos] != 58:  # ':'
            return None
        value = pos + 1
        pos = value
        while pos < n and (data[pos] == 9 or 32 <= data[pos] <= 126 or data[pos] >= 128):
            pos += 1
        if pos + 1 >= n or data[pos] != 13 or data[pos + 1] != 10:
            return None
        if count == MAX_HEADERS or _seen(data, first, start, length):
            return None  # too many headers, or a name twice
        count += 1
        if _named(data, start, length, b"host"):
            host = True
        elif length >= 3 and _named(data, start, 3, b"if-"):
            return None
        elif _named(data, start, length, b"connection"):
            if not _keep_alive(data, value, pos):
                return None
        else:
            for name in _ASIDE:
                if _named(data, start, length, name):
                    return None
        pos += 2
    if pos != n - 2 or not host:
        return None
    return data[4:target_end].decode("ascii")
