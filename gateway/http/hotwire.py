"""Hot answers on the wire: a hot GET answered from bytes as it arrives, before aiohttp parses it.

The hot-answer path (hot.py) skips routing, the middleware and the handler, but aiohttp still
parses the request, makes its Request, StreamWriter and task and renders the response: on a
gateway answering one federation read every few milliseconds, with cold caches, that is about
three quarters of its CPU per read (bench/fanout.py, robots' CPU per live merged read). Here
the connection's handler looks at each chunk of bytes first: a chunk that is exactly one
complete HTTP/1.1 GET with no body, no header the generic path reacts to, every header line
well formed, exactly one `Host`, no header name twice and at most MAX_HEADERS headers (aiohttp
answers 400 to a missing or repeated `Host`, a repeated singleton header and more than 128
headers: those go to it), for a raw path whose probe answers (hot.HotAnswers.wire_body; a merged read's
probe reads the headers from the chunk, WireRequest), is answered with the same status line,
headers and body the generic hot path writes. Anything else goes to aiohttp untouched: a
partial or pipelined chunk, another method, HTTP/1.0, `Connection` other than keep-alive, a
body, Range, Expect, a conditional header.

Only between requests: the handler idle (waiting for a message, none queued), nothing left in
the parser from an earlier chunk (every chunk the connection sent so far was a whole bodiless
request), no response waiting to be written. The handler's keep-alive bookkeeping is done as
aiohttp does it after a response. The fields read (HANDLER_FIELDS) are RequestHandler slots of
aiohttp 3.14: verified on 3.14.2 to 3.14.5 (tests/unit/test_hotwire*.py, both parsers; 3.14.0
and 3.14.1 answer nothing to a bare-LF request with the pure-Python parser either way), hence
pyproject's pin `>=3.14.2,<3.15`. 3.9 to 3.13 lack `_upgraded`: `available()` checks the
fields at start, and without them (or with setting server.hot_wire false) the wire path is off
and hot.py still answers.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web_protocol
from aiohttp.helpers import rfc822_formatted_time  # aiohttp's own, cached per second
from aiohttp.http import SERVER_SOFTWARE
from multidict import CIMultiDict, CIMultiDictProxy

from .._fast import wire_judge, wirejudge_py
from .jsonutil import JSON_TYPE

# RequestHandler fields the wire path reads or keeps current.
HANDLER_FIELDS = ("_loop", "transport", "_waiter", "_messages", "_payload_parser", "_upgraded",
                  "_keepalive", "_keepalive_handle", "_keepalive_timeout",
                  "_next_keepalive_close_time", "_request_count", "_manager", "_force_close",
                  "_close")
# A header line as llhttp accepts it: a token, a colon, visible ASCII, space, tab or obs-text.
_HEADERS = re.compile(rb"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*\r\n)*")
# A request target in origin form: visible ASCII only.
_TARGET = re.compile(rb"/[\x21-\x7e]*")
# Headers after which the generic path answers differently (or a body follows).
_STEP_ASIDE = (b"\nrange:", b"\nexpect:", b"\nif-", b"\ncontent-length:",
               b"\ntransfer-encoding:", b"\nupgrade:")
# More headers than this are aiohttp's to judge (its own limit, max_headers, is 128);
# longer requests too (its line and field limits, the URI limit).
MAX_HEADERS, MAX_CHUNK = wirejudge_py.MAX_HEADERS, wirejudge_py.MAX_CHUNK
# The compiled judge when built (gateway/_fast/wirejudge_py.py): a robot answers each fan-out
# read after sleeping, caches cold, where `_judge` costs about ten times its warm cost.
_JUDGE = wire_judge
MAX_REMEMBERED = 512  # distinct request chunks whose verdict and headers are kept
_verdicts: dict[bytes, str | None] = {}
_headers: dict[bytes, CIMultiDictProxy[str]] = {}
_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: " + JSON_TYPE.encode() + b"\r\nContent-Length: ")


def available() -> bool:
    """Whether this aiohttp's RequestHandler has every field the wire path relies on."""
    slots: set[str] = set()
    for cls in web_protocol.RequestHandler.__mro__:
        slots.update(getattr(cls, "__slots__", ()))
    return all(name in slots for name in HANDLER_FIELDS)


def simple_get(data: bytes) -> str | None:
    """The raw path of a chunk that is exactly one whole bodiless HTTP/1.1 GET the generic
    path would answer like any other GET of that path; else None. A client polling a path
    sends the same bytes every time: the verdicts of recent chunks are remembered."""
    if len(data) > MAX_CHUNK or not data.startswith(b"GET /") or \
            not data.endswith(b"\r\n\r\n"):
        return None
    try:
        return _verdicts[data]
    except KeyError:
        pass
    if len(_verdicts) >= MAX_REMEMBERED:
        _verdicts.clear()
    verdict = _verdicts[data] = (_JUDGE or _judge)(data)
    return verdict


def _judge(data: bytes) -> str | None:
    """The plain judge of a chunk simple_get has checked (the compiled twin's reference)."""
    line_end = data.find(b"\r\n")
    head_end = data.find(b"\r\n\r\n")
    if head_end != len(data) - 4:
        return None  # a second request (pipelined) or a stray blank line
    parts = data[:line_end].split(b" ")
    if len(parts) != 3 or parts[2] != b"HTTP/1.1" or _TARGET.fullmatch(parts[1]) is None:
        return None
    block = data[line_end + 2:]
    if _HEADERS.fullmatch(block[:-2]) is None:
        return None
    lines = block[:-4].split(b"\r\n")
    if len(lines) > MAX_HEADERS:
        return None
    names = [line[:line.find(b":")].lower() for line in lines]
    if len(set(names)) != len(names) or b"host" not in names:
        return None  # a repeated name (Host, a singleton, Connection) or no Host
    low = b"\n" + block.lower()
    if any(name in low for name in _STEP_ASIDE):
        return None
    conn = low.find(b"\nconnection:")
    if conn >= 0 and low[conn + 12:low.find(b"\r", conn)].strip() != b"keep-alive":
        return None
    try:
        return parts[1].decode("ascii")
    except UnicodeDecodeError:
        return None


class WireRequest:
    """What a merged read's probe reads of a request (its headers), from the raw chunk."""

    __slots__ = ("_data", "_headers")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._headers: CIMultiDictProxy[str] | None = None

    @property
    def headers(self) -> CIMultiDictProxy[str]:
        """The request's headers (case-insensitive), parsed when first read."""
        if self._headers is None:
            data = self._data
            headers = _headers.get(data)
            if headers is None:
                block = data[data.find(b"\r\n") + 2:-4].decode("latin-1")
                pairs = (line.partition(":") for line in block.split("\r\n") if line)
                headers = CIMultiDictProxy(CIMultiDict(
                    (k, v.strip(" \t")) for k, _, v in pairs))
                if len(_headers) >= MAX_REMEMBERED:
                    _headers.clear()
                _headers[data] = headers  # read-only: shared by the same chunk's requests
            self._headers = headers
        return self._headers


def whole_bodiless(data: bytes) -> bool:
    """Whether the parser holds nothing of this chunk once fed: whole requests, no body."""
    if not data.endswith(b"\r\n\r\n"):
        return False
    low = data.lower()
    return b"\ncontent-length:" not in low and b"\ntransfer-encoding:" not in low


_TAIL = b"\r\nServer: " + SERVER_SOFTWARE.encode() + b"\r\n\r\n"


def response(body: bytes) -> bytes:
    """A 200 JSON answer with the headers aiohttp writes for web.Response(body, JSON_TYPE)."""
    return b"".join((_HEAD, str(len(body)).encode(), b"\r\nDate: ",
                     rfc822_formatted_time().encode(), _TAIL, body))


def answer(handler: Any, hot: Any, data: bytes) -> bool:
    """Answer the chunk on the wire if it is a hot GET and the connection is between requests
    (see the module docstring); False: feed it to aiohttp."""
    if handler._force_close or handler._close:
        return False  # closing: aiohttp drops what comes
    waiter = handler._waiter
    if waiter is None or waiter.done() or handler._messages or \
            handler._payload_parser is not None or handler._upgraded:
        return False
    transport = handler.transport
    if transport is None or transport.get_write_buffer_size():
        return False
    raw_path = simple_get(data)
    if raw_path is None:
        return False
    body = hot.wire_body(raw_path, data)
    if body is None:
        return False
    transport.write(response(body))
    # What aiohttp's start() does after a response it keeps the connection open for.
    handler._request_count += 1
    handler._manager.requests_count += 1
    handler._keepalive = True
    timeout = handler._keepalive_timeout
    if timeout > 0:
        loop = handler._loop
        close_time = loop.time() + timeout
        handler._next_keepalive_close_time = close_time
        if handler._keepalive_handle is None:
            handler._keepalive_handle = loop.call_at(close_time, handler._process_keepalive)
    return True
