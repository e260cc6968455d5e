"""The compiled wire judge and its pure twin against the plain judge of http/hotwire.py:
the same verdict for every chunk of the hotwire corpus and for seeded random chunks."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

import gateway._fast as fast
from gateway._fast import wirejudge_py
from gateway.http import hotwire
from tests.http.test_hotwire_differential import CORPUS

try:
    from gateway._fast import wirejudge_c
except ImportError:
    wirejudge_c = None

TWINS = [
    pytest.param(wirejudge_py.judge, id="pure"),
    pytest.param(
        None if wirejudge_c is None else wirejudge_c.judge,
        id="compiled",
        marks=pytest.mark.skipif(wirejudge_c is None, reason="compiled twin not built"),
    ),
]
Judge = Callable[[bytes], "str | None"]


def plain(data: bytes) -> str | None:
    """simple_get's verdict without its memo, from the plain judge."""
    if len(data) > hotwire.MAX_CHUNK or not data.startswith(b"GET /") or \
            not data.endswith(b"\r\n\r\n"):
        return None
    return hotwire._judge(data)


FAN_OUT = (b"GET /api/v1/version-info HTTP/1.1\r\nHost: 10.0.0.7:8080\r\n"
           b"X-Vendor-No-Fan-Out: 1\r\nX-Client-Id: live-1\r\n\r\n")
MORE = {
    "fan-out read": FAN_OUT,
    "keep-alive spaced": b"GET /a HTTP/1.1\r\nConnection: \t Keep-ALIVE \t\r\nHost: x\r\n\r\n",
    "keep-alive inside": b"GET /a HTTP/1.1\r\nConnection: keep-alive, x\r\nHost: x\r\n\r\n",
    "if- prefix only": b"GET /a HTTP/1.1\r\nHost: x\r\nIf: 1\r\nIfx-y: 2\r\n\r\n",
    "if- any case": b"GET /a HTTP/1.1\r\nHost: x\r\niF-Match: 1\r\n\r\n",
    "range longer name": b"GET /a HTTP/1.1\r\nHost: x\r\nRanges: 1\r\nX-Range: 2\r\n\r\n",
    "upgrade any case": b"GET /a HTTP/1.1\r\nHost: x\r\nUPGRADE: h2c\r\n\r\n",
    "host twice any case": b"GET /a HTTP/1.1\r\nHOST: x\r\nX: 1\r\nhOsT: y\r\n\r\n",
    "names that share a prefix": b"GET /a HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nX-AB: 2\r\n\r\n",
    "blank line inside": b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nX: 1\r\n\r\n",
    "64 headers": b"GET / HTTP/1.1\r\nHost: h\r\n" + b"".join(
        b"X-%d: v\r\n" % i for i in range(63)) + b"\r\n",
    "65 headers": b"GET / HTTP/1.1\r\nHost: h\r\n" + b"".join(
        b"X-%d: v\r\n" % i for i in range(64)) + b"\r\n",
    "at the size limit": b"GET /a HTTP/1.1\r\nHost: x\r\nX: " + b"a" * (
        hotwire.MAX_CHUNK - 33) + b"\r\n\r\n",
    "past the size limit": b"GET /a HTTP/1.1\r\nHost: x\r\nX: " + b"a" * (
        hotwire.MAX_CHUNK - 32) + b"\r\n\r\n",
    "shortest": b"GET / HTTP/1.1\r\nHost:\r\n\r\n",
    "truncated": b"GET / HTTP/1.1\r\n\r\n",
    "empty": b"",
    "only the end": b"\r\n\r\n",
    "request line only": b"GET / HTTP/1.1\r\n",
}


@pytest.mark.parametrize("judge", TWINS)
@pytest.mark.parametrize("name", sorted({**CORPUS, **MORE}))
def test_every_chunk_of_the_corpus_gets_the_plain_verdict(judge: Judge, name: str) -> None:
    chunk = {**CORPUS, **MORE}[name]
    assert judge(chunk) == plain(chunk)


def test_the_corpus_has_chunks_both_ways() -> None:
    verdicts = [plain(c) for c in {**CORPUS, **MORE}.values()]
    assert sum(v is not None for v in verdicts) >= 10
    assert sum(v is None for v in verdicts) >= 60
    assert plain(MORE["at the size limit"]) == "/a" and plain(MORE["past the size limit"]) is None
    assert plain(MORE["64 headers"]) == "/" and plain(MORE["65 headers"]) is None


PIECES = [b"Host: a", b"host: b", b"Connection: close", b"connection: keep-alive",
          b"Connection:  Keep-Alive\t", b"If-None-Match: x", b"Range: bytes=0-1", b"Expect: 1",
          b"Content-Length: 0", b"Transfer-Encoding: x", b"Upgrade: h2", b"X-A: 1", b"x-a: 2",
          b"Bad Name: 1", b": v", b"If: 1", b"Rangex: 1", b"", b"Val: \x80\xff", b"Val: \x7f",
          b"X-Client-Id: c", b"Tab:\tv"]
NOISE = b"GET /HTTP1.\r\n:\t aXhHoOsStT-ck\x7f\x80\xff\x00"


def random_chunks(seed: int, count: int) -> list[bytes]:
    """Chunks near the accepted shape: headers drawn from PIECES, or a valid chunk with a few
    bytes changed, removed or inserted."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        if rng.random() < 0.5:
            lines = [rng.choice(PIECES) for _ in range(rng.randint(0, 6))]
            target = rng.choice([b"/", b"/x", b"/a b", b"/\x7f", b"/q?a=1", b"x"])
            version = rng.choice([b" HTTP/1.1", b" HTTP/1.0", b"  HTTP/1.1", b" HTTP/1.1 "])
            out.append(b"GET " + target + version + b"\r\n"
                       + b"".join(line + b"\r\n" for line in lines) + b"\r\n")
            continue
        chunk = bytearray(rng.choice([FAN_OUT, MORE["keep-alive spaced"], MORE["shortest"]]))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(chunk))
            op = rng.random()
            if op < 0.33:
                del chunk[at]
            elif op < 0.66:
                chunk[at:at] = bytes([rng.choice(NOISE)])
            else:
                chunk[at] = rng.choice(NOISE)
        out.append(bytes(chunk))
    return out


@pytest.mark.parametrize("judge", TWINS)
def test_random_chunks_get_the_plain_verdict(judge: Judge) -> None:
    chunks = random_chunks(2026, 20000)
    differ = [c for c in chunks if judge(c) != plain(c)]
    assert not differ, f"{len(differ)} of {len(chunks)} differ, first: {differ[0]!r}"
    assert sum(plain(c) is not None for c in chunks) > 1000  # both verdicts well covered


def test_simple_get_uses_the_compiled_judge_when_built() -> None:
    expected = None if wirejudge_c is None else wirejudge_c.judge
    assert fast.wire_judge is expected and hotwire._JUDGE is expected
    assert fast.WIREJUDGE_IMPL == ("plain" if expected is None else "compiled")
    assert hotwire.MAX_CHUNK == wirejudge_py.MAX_CHUNK
    assert hotwire.MAX_HEADERS == wirejudge_py.MAX_HEADERS


def test_compiled_judge_is_loaded_when_required() -> None:
    if os.environ.get("DIAG_GATEWAY_REQUIRE_EXT") != "1":
        pytest.skip("DIAG_GATEWAY_REQUIRE_EXT is not set")
    assert wirejudge_c is not None, "gateway._fast.wirejudge_c is not built"
    assert Path(wirejudge_c.__file__).suffix in (".so", ".pyd")
    assert fast.WIREJUDGE_IMPL == "compiled"
