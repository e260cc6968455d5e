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
aiohttp does it after a response (not its two request counters: nothing the gateway runs
reads them). A wire answer is what a raw protocol writing fixed bytes does plus the checks it
needs, in one function (WireHandler.data_received): a connection remembers the verdict of its
last chunk and the bytes of its last answer, written again while the probe returns the same
body object and the Date second is the same (_Clock: the header tail made once a second, timed
by the loop's clock); after a wire answer the handler's idle state is known until it closes.
The fields read (HANDLER_FIELDS) are RequestHandler slots of
aiohttp 3.14: verified on 3.14.2 to 3.14.5 (tests/http/test_hotwire*.py, both parsers; 3.14.0
and 3.14.1 answer nothing to a bare-LF request with the pure-Python parser either way), hence
pyproject's pin `>=3.14.2,<3.15`. 3.9 to 3.13 lack `_upgraded`: `available()` checks the
fields at start, and without them (or with setting server.hot_wire false) the wire path is off
and hot.py still answers.
"""

from __future__ import annotations

import re
import time
from typing import Any

from aiohttp import web_protocol
from aiohttp.http import SERVER_SOFTWARE
from multidict import CIMultiDict, CIMultiDictProxy

from .._fast import wire_judge, wirejudge_py
from .jsonutil import JSON_TYPE

# RequestHandler fields the wire path reads or keeps current.
HANDLER_FIELDS = ("_loop", "transport", "_waiter", "_messages", "_payload_parser", "_upgraded",
                  "_keepalive", "_keepalive_handle", "_keepalive_timeout",
                  "_next_keepalive_close_time", "_force_close", "_close")
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
_verdicts: dict[bytes, str | None] = {}  # only chunks the quick checks let through
_UNSEEN: Any = object()  # not in the memo
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
    if len(data) > MAX_CHUNK:
        return None  # before the memo: hashing a long chunk costs more than the checks
    verdict = _verdicts.get(data, _UNSEEN)
    if verdict is not _UNSEEN:
        return verdict
    if not data.startswith(b"GET /") or not data.endswith(b"\r\n\r\n"):
        return None
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


class _Clock:
    """The head's tail for answers now: Date (aiohttp's format, this second), Server, blank
    line; made once a second, and valid while the loop's clock is short of the next second."""

    __slots__ = ("tail", "until")

    def __init__(self) -> None:
        self.tail = b""
        self.until = float("-inf")  # loop time

    def tick(self, now: float) -> bytes:
        """The tail at loop time `now`, made anew past `until`."""
        if now >= self.until:
            wall = time.time()
            second = int(wall)
            # The loop's clock counts milliseconds (uvloop): 2 ms short of the next second
            # the tail is made again, so no answer carries the last second's Date.
            self.until = now + (second + 1 - wall) - 0.002
            self.tail = (b"\r\nDate: " + http_date(second).encode() + b"\r\nServer: "
                         + SERVER_SOFTWARE.encode() + b"\r\n\r\n")
        return self.tail


def http_date(second: int) -> str:
    """A Date value as aiohttp's rfc822_formatted_time writes it for this second."""
    year, month, day, hh, mm, ss, wd, *_ = time.gmtime(second)
    return "%s, %02d %3s %4d %02d:%02d:%02d GMT" % (  # noqa: UP031  (aiohttp's own format)
        _WEEKDAYS[wd], day, _MONTHS[month], year, hh, mm, ss)


_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
           "Dec")
_CLOCK = _Clock()
# A connection keeps its last answer's bytes up to this size, written again while the body
# and the Date second are the same (a client polling a path); longer ones are joined anew.
KEPT_ANSWER_MAX = 65536


class WireHandler(web_protocol.RequestHandler):
    """aiohttp's connection handler, answering hot GETs on the wire (see the module docstring)
    when given the server's HotAnswers."""

    __slots__ = ("_hot", "_wire_clean", "_wire_idle", "_wire_chunk", "_wire_path",
                 "_wire_body", "_wire_tail", "_wire_out")

    def __init__(self, *args: Any, hot_answers: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hot = hot_answers  # hot.HotAnswers: wire_body(raw_path, data)
        # every chunk so far was whole bodiless requests (and there are hot answers: without
        # them every chunk goes to aiohttp, and this stays False)
        self._wire_clean = hot_answers is not None
        # the last chunk was answered on the wire: aiohttp has seen nothing since it was
        # found waiting between requests, so it still is unless closing
        self._wire_idle = False
        self._wire_chunk = b""  # the last chunk judged here, and its raw path
        self._wire_path: str | None = None
        # the last answer written, of this body and this tail (_Clock): written again while
        # both are the same objects (a client polling a path)
        self._wire_body = self._wire_tail = self._wire_out = b""

    def data_received(self, data: bytes) -> None:
        # The whole wire answer in one function: it runs once per hot read.
        if not self._wire_clean:
            super().data_received(data)
            return
        if self._force_close or self._close:
            return  # closing: aiohttp drops what comes
        transport = self.transport
        if not self._wire_idle:
            waiter = self._waiter
            if waiter is None or waiter.done() or self._messages or \
                    self._payload_parser is not None or self._upgraded:
                self._aiohttp(data)  # aiohttp is busy with a request, or reads a body
                return
        if transport is None or transport.get_write_buffer_size():
            self._aiohttp(data)  # the last answer is not out yet
            return
        if data == self._wire_chunk:
            raw_path = self._wire_path
        else:
            raw_path = _verdicts.get(data, _UNSEEN) if len(data) <= MAX_CHUNK else None
            if raw_path is _UNSEEN:
                raw_path = simple_get(data)
            self._wire_chunk, self._wire_path = data, raw_path
        body = None if raw_path is None else self._hot.wire_body(raw_path, data)
        if body is None:
            self._aiohttp(data)
            return
        loop = self._loop
        now = loop.time()
        clock = _CLOCK
        tail = clock.tail if now < clock.until else clock.tick(now)
        if body is self._wire_body and tail is self._wire_tail:
            transport.write(self._wire_out)
        else:
            out = b"".join((_HEAD, str(len(body)).encode(), tail, body))
            if len(out) <= KEPT_ANSWER_MAX:
                self._wire_body, self._wire_tail, self._wire_out = body, tail, out
            transport.write(out)
        self._wire_idle = True
        # What aiohttp's start() does after a response it keeps the connection open for,
        # but for two counters: the server's requests_count (read by gunicorn's worker only)
        # and the connection's _request_count (read by RequestHandler.handle_error only, which
        # server._Handler replaces).
        self._keepalive = True
        timeout = self._keepalive_timeout
        if timeout > 0:
            close_time = now + timeout
            self._next_keepalive_close_time = close_time
            if self._keepalive_handle is None:
                self._keepalive_handle = loop.call_at(close_time, self._process_keepalive)

    def _aiohttp(self, data: bytes) -> None:
        """Feed the chunk to aiohttp's parser; the connection stays with the wire path while
        its chunks are whole bodiless requests."""
        self._wire_idle = False
        self._wire_clean = whole_bodiless(data)
        super().data_received(data)
